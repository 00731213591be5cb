//! What only the engine's integration tests share: calling a route as the front doors do.
//! Everything else (anvil, fake nodes, loopback servers) is in `paperchain-testkit`.

pub mod chain;
pub mod ens;
pub mod market;
pub mod route;
