//! Flow scheduling decisions. OWNER: flow helper.
