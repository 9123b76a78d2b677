//! Parses arbitrary text as an OPTIONS file and as a `key=value;...` option string: bad text is
//! an error, never a panic, and options that parse render to a file that parses to the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use strata::Options;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(opts) = Options::from_ini_str(text) {
        let rendered = opts.to_ini_string();
        let again = Options::from_ini_str(&rendered).expect("a rendered OPTIONS file parses");
        assert_eq!(again.to_ini_string(), rendered);
    }
    if let Ok(opts) = Options::default().with_option_string(text) {
        let rendered = opts.to_ini_string();
        let again = Options::from_ini_str(&rendered).expect("a rendered OPTIONS file parses");
        assert_eq!(again.to_ini_string(), rendered);
    }
});
