//! `marks`: the one binary of the Valuation Marks service. Everything it does lives in the
//! library; the command line is `marks::cli`.

fn main() -> std::process::ExitCode {
    marks::cli::main()
}
