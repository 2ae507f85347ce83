//! RPC latency benchmark (filled in below).
fn main() {}
