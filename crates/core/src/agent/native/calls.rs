//! Reading tool calls from imperfect servers (pure). STUB: being written.
