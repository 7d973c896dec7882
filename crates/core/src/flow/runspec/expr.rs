//! CEL and minijinja: compiling and evaluating over the JSON context.
