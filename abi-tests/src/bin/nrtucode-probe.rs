//! `nrtucode-probe LIB SCENARIO`: one call that must end the process or write to stderr
//! (abi_tests::scenarios); `nrtucode-probe --list` prints the scenarios and their outcomes.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        for (s, e) in abi_tests::scenarios::SCENARIOS {
            println!("{s} {e}");
        }
        return;
    }
    let [lib, scenario] = args.as_slice() else {
        eprintln!("usage: nrtucode-probe LIB SCENARIO | --list");
        std::process::exit(2);
    };
    abi_tests::scenarios::run_scenario(std::path::Path::new(lib), scenario);
}
