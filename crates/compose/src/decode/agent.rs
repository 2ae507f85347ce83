//! The `agent` block: the profile it runs, the port it is bound to, its thread count and its
//! explicit seed.
//!
//! It decodes what is written; whether the profile and port exist, the thread budget and the
//! seed rules are the resolver's to check.

use flysim_types::limits::MAX_WORKER_THREADS;
use kdl::KdlNode;

use super::node::{FileDecoder, NodeSpec, ValueChild, present};
use crate::model::Agent;

const AGENT: NodeSpec =
    NodeSpec::named_block("the agent's id", &["profile", "port", "threads", "seed"]);
const PROFILE: ValueChild =
    ValueChild::required("profile", "the profile's id", "profile \"<profile id>\"");
const PORT: ValueChild = ValueChild::required("port", "the port's id", "port \"<port id>\"");
const THREADS: ValueChild = ValueChild::optional("threads", "a thread count");
const SEED: ValueChild = ValueChild::optional("seed", "a 32-bit signed integer");

/// `agent "<id>" { profile "<id>"; port "<id>"; threads <n>; seed <n> }`.
pub(super) fn decode_agent(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Agent> {
    let checked = dec.check(node, &AGENT);
    let id = dec.named_id(&checked, "the agent id");
    let children = &checked.children;
    let profile = dec.value(children, &PROFILE, node, |dec, e| {
        dec.id(e, "the profile id")
    });
    let port = dec.value(children, &PORT, node, |dec, e| dec.id(e, "the port id"));
    let mut ok = true;
    let threads = dec.value(children, &THREADS, node, |dec, e| {
        dec.int(e, "`threads`", 1, MAX_WORKER_THREADS)
    });
    let seed = dec.value(children, &SEED, node, |dec, e| {
        dec.int(e, "`seed`", i32::MIN, i32::MAX)
    });
    let agent = Agent {
        id: id?,
        profile: profile.flatten()?,
        port: port.flatten()?,
        threads: present(&mut ok, threads),
        seed: present(&mut ok, seed),
    };
    ok.then_some(agent)
}
