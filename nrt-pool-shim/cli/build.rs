//! Generates nrt-pool's shell completions (bash, zsh, fish) from its clap declaration.
use clap::CommandFactory;

include!("src/cli.rs");

fn main() {
    println!("cargo:rerun-if-changed=src/cli.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let mut cmd = Cli::command();
    for (shell, file) in [
        (clap_complete::Shell::Bash, "nrt-pool.bash"),
        (clap_complete::Shell::Zsh, "_nrt-pool"),
        (clap_complete::Shell::Fish, "nrt-pool.fish"),
    ] {
        let mut f = std::fs::File::create(out.join(file)).expect("completion file");
        clap_complete::generate(shell, &mut cmd, "nrt-pool", &mut f);
    }
}
