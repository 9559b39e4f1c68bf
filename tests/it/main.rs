//! The integration tests, one binary: every CLI run, golden output and
//! property test over the real fixtures. One binary links the library once
//! (31 binaries of about 400 MB each with debug info filled the CI disk);
//! `memory_bounds` stays its own binary, its counting global allocator must
//! see only its own work. Run one file with `cargo test --test it ops_cli::`.

mod common;

mod attribution;
mod bad_input;
mod batch_cli;
mod batch_records;
mod batch_robust;
mod batch_sections;
mod consistency;
mod critical_cli;
mod custom_analysis;
mod diff_cli;
mod export_cli;
mod extract_props;
mod fast_path;
mod figures;
mod graphs_cli;
mod hierarchy_cli;
mod idle_cli;
mod iterations_cli;
mod kernels_cli;
mod memory_cli;
mod newcomer_cli;
mod ops_cli;
mod pair_cli;
mod pipelined;
mod plot_cli;
mod ranks_cli;
mod reader_props;
mod robustness;
mod robustness_bounds;
mod robustness_exact;
mod robustness_ids;
mod robustness_mixups;
mod robustness_round3;
mod roofline_cli;
mod structure;
