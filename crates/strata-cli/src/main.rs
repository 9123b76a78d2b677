//! The `strata` command.

fn main() {
    eprintln!("strata: no commands yet");
    std::process::exit(2);
}
