//! One client calling many servers together from C: `pp_fanout`, over the crate's
//! [`Fanout`](peerpipe::fanout::Fanout).

use std::ffi::{c_char, c_int};

use peerpipe::codec::{Values, ValuesMut};
use peerpipe::fanout::Fanout;

use crate::error::{Failure, PP_OK, code_of, invalid};
use crate::ffi::{self, guard, guard_or};
use crate::options::pp_options;

/// Many servers called together: every request is sent before any reply is awaited, so N
/// servers that each take a millisecond answer in about a millisecond, not N. Made by
/// `pp_fanout_spawn_shell`, freed by `pp_fanout_close`. Opaque; not to be used from two threads
/// at once.
#[allow(non_camel_case_types)]
pub struct pp_fanout {
    fanout: Fanout,
}

/// Starts one server per command line of `lines` (`n` of them, each as `pp_spawn_shell_with`
/// takes it: `srun -w node1 peer --role server --transport tcp`, say) all at once, each on a
/// thread of its own so that slow starts overlap, and exchanges HELLOs with each. The
/// options' timeout (NULL options: the defaults, 10 s) is then every gather's deadline.
///
/// Ownership: on success `*out` holds a new fan-out the caller frees with `pp_fanout_close`;
/// on failure `*out` is NULL and every server that did start has been terminated and reaped.
///
/// Returns `PP_OK`; `PP_EINVAL` when `lines` or `out` is NULL, `n` is 0, a line is NULL or not
/// UTF-8; otherwise the code of the first server that could not be started, `pp_last_error()`
/// naming its index and command line (as `pp_spawn_shell_with` would fail for it).
///
/// # Safety
/// `lines` is NULL or points to `n` pointers, each NULL or a NUL-terminated string; `options`
/// is NULL or a live `pp_options`, not changed during the call; `out` is NULL or points to
/// writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_fanout_spawn_shell(
    lines: *const *const c_char,
    n: usize,
    options: *const pp_options,
    out: *mut *mut pp_fanout,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees `out` NULL or writable.
        let out = unsafe { ffi::clear_out(out) }?;
        if n == 0 {
            return Err(invalid("n", "is 0: a fan-out needs a server"));
        }
        // SAFETY: the caller guarantees `lines` NULL or `n` pointers, each NULL or a string.
        let texts = unsafe { ffi::c_strs(lines, n, "lines") }?;
        // SAFETY: the caller guarantees NULL or a live, unchanging pp_options.
        let options = unsafe { pp_options::or_default(options) }.options;
        ffi::ignore_sigpipe_if_default();
        let fanout = Fanout::spawn_shell(&texts, options)?;
        // SAFETY: `out` was checked non-NULL by clear_out; the caller guarantees it writable.
        unsafe { out.write(Box::into_raw(Box::new(pp_fanout { fanout }))) };
        Ok(())
    })
}

/// The number of servers of `fanout`; 0 for NULL.
///
/// # Safety
/// `fanout` is NULL or a live fan-out not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_fanout_len(fanout: *const pp_fanout) -> usize {
    guard_or(0, || {
        // SAFETY: the caller guarantees NULL or a live fan-out.
        Ok(unsafe { fanout.as_ref() }.map_or(0, |f| f.fanout.len()))
    })
}

/// Sends `in[i]` (`n_in[i]` doubles) to server `i`, every request before any reply is
/// awaited, then receives server `i`'s reply into `out[i]` (`out_len[i]` doubles, the length
/// its reply must have), for every server of `fanout`. One deadline, the options' timeout,
/// counts from the start for the whole gather.
///
/// `results` (NULL: not wanted) receives each server's own code: `PP_OK`, or what failed for
/// that server (`PP_EEXITED` for one that died, `PP_ETIMEDOUT`, `PP_EREMOTE`, ...). A server's
/// failure leaves the other replies delivered in their buffers; the contents of a failed
/// server's `out[i]` are unspecified, and a server that failed is gone for later gathers.
///
/// Returns `PP_OK` when every server answered; else the code of the first server that failed,
/// `pp_last_error()` naming its index and command line. `PP_EINVAL` (nothing sent) when
/// `fanout`, `in`, `n_in`, `out` or `out_len` is NULL, a buffer is NULL with a nonzero
/// length, or an `out` buffer overlaps another buffer.
///
/// # Safety
/// `fanout` is NULL or a live fan-out not in use by another thread; `in`, `n_in`, `out`,
/// `out_len` are NULL or each point to `pp_fanout_len(fanout)` elements; each `in[i]` is NULL
/// or points to `n_in[i]` readable doubles and each `out[i]` to `out_len[i]` writable doubles;
/// `results` is NULL or
/// points to `pp_fanout_len(fanout)` writable ints. The buffers are used only during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_fanout_call_each_f64(
    fanout: *mut pp_fanout,
    r#in: *const *const f64,
    n_in: *const usize,
    out: *const *mut f64,
    out_len: *const usize,
    results: *mut c_int,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live fan-out used by this thread only.
        let fanout = unsafe { fanout.as_mut() }.ok_or_else(|| invalid("fanout", "is NULL"))?;
        let n = fanout.fanout.len();
        // SAFETY: the caller guarantees each array NULL or `n` readable elements.
        let (inputs, n_in, outputs, out_len) = unsafe {
            (
                ffi::slice(r#in, n, "in")?,
                ffi::slice(n_in, n, "n_in")?,
                ffi::slice(out, n, "out")?,
                ffi::slice(out_len, n, "out_len")?,
            )
        };
        // A reply buffer that overlaps another buffer would alias it: refused, as pp_call_f64
        // refuses `out` overlapping `in` (a few servers: every pair is compared).
        for i in 0..n {
            let reply = (outputs[i].cast_const(), out_len[i]);
            for j in 0..n {
                if overlaps(reply, (inputs[j], n_in[j])) {
                    return Err(invalid(format!("out[{i}]"), &format!("overlaps in[{j}]")));
                }
                if j > i && overlaps(reply, (outputs[j].cast_const(), out_len[j])) {
                    return Err(invalid(format!("out[{i}]"), &format!("overlaps out[{j}]")));
                }
            }
        }
        let mut requests = Vec::with_capacity(n);
        let mut replies = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: the caller guarantees `in[i]` and `out[i]` as documented; no `out`
            // buffer overlaps another buffer (checked), so the slices never alias.
            let (request, reply) = unsafe {
                (
                    ffi::slice(inputs[i], n_in[i], format_args!("in[{i}]"))?,
                    ffi::slice_mut(outputs[i], out_len[i], format_args!("out[{i}]"))?,
                )
            };
            requests.push(Values::F64(request));
            replies.push(ValuesMut::F64(reply));
        }
        let gathered = fanout.fanout.call_each(&requests, &mut replies)?;
        let mut first: Option<Failure> = None;
        for (i, result) in gathered.results.iter().enumerate() {
            let code = match result {
                Ok(_) => PP_OK,
                Err(failed) => {
                    let code = code_of(&failed.error);
                    first.get_or_insert_with(|| Failure { code, message: failed.to_string() });
                    code
                }
            };
            if !results.is_null() {
                // SAFETY: the caller guarantees NULL or `n` writable ints.
                unsafe { results.add(i).write(code) };
            }
        }
        first.map_or(Ok(()), Err)
    })
}

/// Whether two runs of doubles, each its start and length, share a byte.
fn overlaps((a, a_len): (*const f64, usize), (b, b_len): (*const f64, usize)) -> bool {
    let size = std::mem::size_of::<f64>();
    let (a0, b0) = (a as usize, b as usize);
    let (a1, b1) = (
        a0.saturating_add(a_len.saturating_mul(size)),
        b0.saturating_add(b_len.saturating_mul(size)),
    );
    a_len > 0 && b_len > 0 && a0 < b1 && b0 < a1
}

/// Says BYE to every server, waits for each to exit and reaps it, and frees `fanout` — all
/// of them even when one fails. NULL is a no-op returning `PP_OK`.
///
/// Ownership: `fanout` is freed whatever the return code; do not use it again.
///
/// Returns `PP_OK`, or the code of the first server that did not close cleanly,
/// `pp_last_error()` naming it.
///
/// # Safety
/// `fanout` is NULL or a live fan-out from `pp_fanout_spawn_shell`, not in use by another
/// thread and not closed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_fanout_close(fanout: *mut pp_fanout) -> c_int {
    guard(|| {
        if fanout.is_null() {
            return Ok(());
        }
        // SAFETY: made by Box::into_raw in pp_fanout_spawn_shell, not closed before.
        let fanout = unsafe { Box::from_raw(fanout) };
        fanout
            .fanout
            .close()
            .map_err(|failed| Failure { code: code_of(&failed.error), message: failed.to_string() })
    })
}
