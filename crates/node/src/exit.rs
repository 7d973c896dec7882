//! What a `Rig` leaves running is stopped when Node exits.
//!
//! At exit (`process.exit()` or the end of the script, also in a worker)
//! one `process.on('exit')` listener per environment, installed by its
//! first `Rig`, runs the core's [`Rig::shutdown`] on every core rig its
//! rigs opened (flow runs and battle tasks left to be resumed by lease,
//! agent turns stopped, the bus last) and `Registry::shutdown` on the rigs
//! that never opened one but still run turns — all at once, at most
//! `DEFAULT_SHUTDOWN_GRACE`, blocking the exit that long, so no agent
//! process group outlives Node. (An env cleanup hook would not do: Node
//! skips them on `process.exit()`.)
//!
//! The listener holds an opened core rig strongly: its workers run whether
//! or not a JS object still refers to it, so it is stopped at exit even
//! when its `Rig` was collected. A rig that opened nothing is held weakly,
//! through its registry (a `Turn` holds its rig's registry, so the turns of
//! a collected `Rig` are stopped while their `Turn` lives).

use crate::helpers::Res;
use coderig::agent::{Registry, DEFAULT_SHUTDOWN_GRACE};
use coderig::rig::Rig;
use napi::bindgen_prelude::{
    within_runtime_if_available, FnArgs, Function, JsObjectValue, Object, Unknown,
};
use napi::Env;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::OnceCell;

/// A core rig, once opened: the face's `Rig` opens it, and this
/// listener shuts it down at the process's exit.
pub(crate) type Opened = Arc<OnceCell<Rig>>;

/// What the exit listener stops of one `Rig`.
struct ExitTarget {
    registry: Weak<Registry>,
    core: Opened,
}

impl ExitTarget {
    /// Whether there may be something to stop at exit.
    fn live(&self) -> bool {
        self.registry.strong_count() > 0 || self.core.initialized()
    }
}

/// The rigs of one Node environment (its instance data), shut down by its
/// `process.on('exit')` listener.
type Exits = Arc<std::sync::Mutex<Vec<ExitTarget>>>;

/// `process.on(event, listener)`.
type On<'env> = Function<'env, FnArgs<(&'static str, Function<'env, (), ()>)>, Unknown<'env>>;

/// Adds a rig (its `registry` and the core rig it may open) to what this
/// environment shuts down at exit, installing the environment's one
/// `process.on('exit')` listener with its first rig.
pub(crate) fn shut_down_at_exit(env: &Env, registry: &Arc<Registry>, core: &Opened) -> Res<()> {
    let target = ExitTarget {
        registry: Arc::downgrade(registry),
        core: core.clone(),
    };
    if let Some(exits) = env.get_instance_data::<Exits>()? {
        let mut rigs = exits.lock().unwrap_or_else(|p| p.into_inner());
        rigs.retain(ExitTarget::live);
        rigs.push(target);
        return Ok(());
    }
    let exits: Exits = Arc::new(std::sync::Mutex::new(vec![target]));
    env.set_instance_data(exits.clone(), (), |_| {})?;
    let listener = env.create_function_from_closure::<(), (), _>("coderigShutdown", move |_| {
        let rigs = std::mem::take(&mut *exits.lock().unwrap_or_else(|p| p.into_inner()));
        shutdown(rigs);
        Ok(())
    })?;
    let process: Object = env.get_global()?.get_named_property("process")?;
    let on: On = process.get_named_property("on")?;
    on.apply(process, ("exit", listener).into())?;
    Ok(())
}

/// What one target needs stopped: its core rig when one was opened (its
/// shutdown stops the registry's turns too), else its registry when turns
/// still run. Nothing is opened at exit.
enum Stop {
    Rig(Rig),
    Turns(Arc<Registry>),
}

/// Stops every target at once and blocks until they all ended, at most
/// `DEFAULT_SHUTDOWN_GRACE`.
fn shutdown(targets: Vec<ExitTarget>) {
    let stops: Vec<Stop> = targets
        .iter()
        .filter_map(|t| match (t.core.get(), t.registry.upgrade()) {
            (Some(rig), _) => Some(Stop::Rig(rig.clone())),
            (None, Some(registry)) if registry.running_turns() > 0 => Some(Stop::Turns(registry)),
            (None, _) => None,
        })
        .collect();
    if stops.is_empty() {
        return;
    }
    let (done, ended) = std::sync::mpsc::channel();
    within_runtime_if_available(|| {
        let tasks: Vec<_> = stops
            .into_iter()
            .map(|stop| {
                tokio::spawn(async move {
                    match stop {
                        Stop::Rig(rig) => rig.shutdown(DEFAULT_SHUTDOWN_GRACE).await,
                        Stop::Turns(registry) => {
                            registry.shutdown(DEFAULT_SHUTDOWN_GRACE).await;
                        }
                    }
                })
            })
            .collect();
        tokio::spawn(async move {
            for task in tasks {
                let _ = task.await;
            }
            let _ = done.send(());
        })
    });
    let _ = ended.recv_timeout(DEFAULT_SHUTDOWN_GRACE + Duration::from_secs(1));
}
