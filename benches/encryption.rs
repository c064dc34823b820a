//! Placeholder: the encryption benchmark follows in the next commit.

fn main() {}
