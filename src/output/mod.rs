//! Everything webevo writes: table schemas, row encoding, Parquet files, and the
//! commit protocol that makes a run's outputs appear all at once or not at all.

pub mod batch;
pub mod change;
pub mod commit;
pub mod discovery;
pub mod echo;
pub mod pages_table;
pub mod parquet;
pub mod rankmass;
pub mod rows;
pub mod schema;
