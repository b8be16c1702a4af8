//! A server of your own in a few lines: it doubles every f64 it receives.
//!
//! It speaks wire format v1 on stdin/stdout, so any client can drive it, e.g. the report:
//!
//! ```sh
//! cargo build --release --example custom_server
//! cargo run --release --bin peer -- --spawn target/release/examples/custom_server --sizes 500 --dtype f64
//! ```

use peerpipe::frame::Dtype;
use peerpipe::parts::PartsOut;
use peerpipe::server::{self, Handler, Request, Response, ServeOptions};
use peerpipe::{Result, Wait};

#[derive(Default)]
struct Doubler {
    input: Vec<f64>,
    output: Vec<f64>,
}

impl Handler for Doubler {
    fn name(&self) -> &str {
        "doubler"
    }

    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        _: &mut PartsOut,
    ) -> std::result::Result<Response<'a>, String> {
        // One array (a DATA request, or the same as one part): other requests get ERROR.
        let array = request.array()?;
        array.expect_dtype(Dtype::F64)?;
        // View the payload in place when possible; decode with the codec otherwise.
        let input: &[f64] = match array.f64_view() {
            Some(view) => view,
            None => {
                array.decode_f64_into(&mut self.input)?;
                &self.input
            }
        };
        self.output.clear();
        self.output.extend(input.iter().map(|x| 2.0 * x));
        Ok(Response::F64(&self.output))
    }
}

fn main() -> Result<()> {
    let mut transport = server::stdio_transport(Wait::default())?;
    server::serve(&mut transport, &mut Doubler::default(), &ServeOptions::default())?;
    Ok(())
}
