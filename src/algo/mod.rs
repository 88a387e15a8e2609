//! Plain per-site algorithms, called from inside differential `reduce`s on one
//! site's data. No timely or differential types here.

pub mod change;
pub mod closure;
pub mod disjoint_sets;
pub mod echo;
pub mod echo_sim;
pub mod greedy;
pub mod jaccard;
pub mod pagerank;
pub mod rankmass;
pub mod revisit;
pub mod sample_sort;
pub mod site_round;
pub mod url_order;
