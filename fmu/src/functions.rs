//! The table of an FMU binary's functions, loaded by name ([`fmi_functions!`]).

/// Declares `struct NAME` holding the functions listed (each `field: b"symbol" => fn(...)`),
/// with `NAME::load(path)`, which fails naming the first of the `required` fields (`field =
/// "symbol"`) the binary lacks.
#[macro_export]
macro_rules! fmi_functions {
    ($(#[$doc:meta])* $name:ident, required: [$($required:ident = $required_symbol:literal),*];
     $( $field:ident : $symbol:literal => fn($($arg:ty),*) $(-> $ret:ty)? ;)*) => {
        $(#[$doc])*
        #[allow(missing_docs)]
        pub struct $name {
            _library: libloading::Library,
            $(pub $field: Option<unsafe extern "C" fn($($arg),*) $(-> $ret)?>,)*
        }

        impl $name {
            /// Loads the binary at `path`.
            ///
            /// # Errors
            /// When it cannot be loaded, or lacks one of the functions every co-simulation
            /// FMU has.
            pub fn load(path: &std::path::Path) -> Result<$name, $crate::Error> {
                let library = $crate::binary::load(path)?;
                let functions = $name {
                    $($field: {
                        type Function = unsafe extern "C" fn($($arg),*) $(-> $ret)?;
                        let name: &[u8] = $symbol;
                        // SAFETY: the symbol is an FMI function of the type the standard gives
                        // it; the pointer is used only while `_library` keeps the library
                        // loaded.
                        unsafe { library.get::<Function>(name) }.ok().map(|symbol| *symbol)
                    },)*
                    _library: library,
                };
                $(
                    if functions.$required.is_none() {
                        return Err($crate::Error::new(format!(
                            "the FMU's binary {} does not export {}",
                            path.display(),
                            $required_symbol
                        )));
                    }
                )*
                Ok(functions)
            }
        }
    };
}
