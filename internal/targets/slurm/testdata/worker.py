"""Stands in for Megatron's pretrain_gpt.py in parc's launch tests.

It joins the gloo process group from the torch.distributed environment the
launcher gave it (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; env://), checks
the group with an all_reduce, and prints one line
"PARC-WORKER {json}" with what it received: its ranks, the master address,
the Slurm node, the all_reduce sum, its arguments and the variables named in
PARC_TEST_ENV (comma separated). With PARC_TEST_OUT set, the record is also
written to $PARC_TEST_OUT/worker-RANK.json (the output of several tasks may
interleave in the job's log; files do not).

With PARC_TEST_MODE=preempt (and SLURM_RESTART_COUNT unset or 0) it instead
waits for SIGTERM, as Megatron's --exit-signal-handler does, prints
"PARC-CHECKPOINT {json}" (and checkpoint-RANK.json) and exits 0.
"""
import datetime
import json
import os
import signal
import sys
import time


def emit(tag, record):
    line = json.dumps(record, sort_keys=True)
    out = os.environ.get("PARC_TEST_OUT")
    if out:
        name = os.path.join(out, "%s-%d.json" % (tag.split("-")[1].lower(), record["rank"]))
        with open(name + ".tmp", "w") as f:
            f.write(line)
        os.rename(name + ".tmp", name)
    os.write(1, (tag + " " + line + "\n").encode())


env = os.environ
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
if env.get("PARC_TEST_MODE") == "preempt" and int(env.get("SLURM_RESTART_COUNT", "0") or 0) == 0:
    got = []
    signal.signal(signal.SIGTERM, lambda sig, frame: got.append(sig))
    emit("PARC-WAITING", {"rank": rank})
    deadline = time.time() + 120
    while not got and time.time() < deadline:
        time.sleep(0.05)
    emit("PARC-CHECKPOINT", {"rank": rank, "signal": got[0] if got else None})
    sys.exit(0)

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=60))
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
names = [n for n in env.get("PARC_TEST_ENV", "").split(",") if n]
emit("PARC-WORKER", {
    "rank": rank,
    "world_size": world,
    "local_rank": int(env["LOCAL_RANK"]),
    "master_addr": env["MASTER_ADDR"],
    "master_port": env["MASTER_PORT"],
    "node": env.get("SLURMD_NODENAME", ""),
    "sum": total.item(),
    "argv": sys.argv[1:],
    "env": {n: env.get(n) for n in names},
})
dist.barrier()
dist.destroy_process_group()
