//! Arena decisions. OWNER: arena helper.
