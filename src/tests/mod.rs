//! hos's tests that read its sources or need its internals; the tests of its public surface
//! are the integration tests in `tests/`.

mod layers;
