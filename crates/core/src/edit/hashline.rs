//! OWNER: hashline-guards helper.
