"""A parc launch test worker: checks that the launcher placed this process
where launch.json says, then creates every process group of the plan with
torch.distributed.new_group (gloo, env://) and all-reduces in each group it
belongs to, proving that the members are exactly the plan's ranks."""

import datetime
import json
import os
import sys

import torch
import torch.distributed as dist


def fail(msg):
    print(f"FAIL rank={os.environ.get('RANK')}: {msg}", flush=True)
    sys.exit(1)


def main():
    with open(os.environ["PARC_LAUNCH_PLAN"]) as f:
        plan = json.load(f)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    node = int(os.environ["NODE_RANK"])
    if world != plan["world_size"]:
        fail(f"WORLD_SIZE={world}, plan world_size={plan['world_size']}")
    places = [(n, w) for n in plan["nodes"] for w in n["workers"] if w["rank"] == rank]
    if len(places) != 1:
        fail(f"rank {rank} appears {len(places)} times in the plan")
    n, w = places[0]
    if (n["index"], w["local_rank"]) != (node, local):
        fail(f"NODE_RANK={node} LOCAL_RANK={local}, plan says node {n['index']} local_rank {w['local_rank']}")
    if int(os.environ["LOCAL_WORLD_SIZE"]) != len(n["workers"]):
        fail(f"LOCAL_WORLD_SIZE={os.environ['LOCAL_WORLD_SIZE']}, plan has {len(n['workers'])} workers on node {node}")
    if os.environ["GROUP_RANK"] != str(node):
        fail(f"GROUP_RANK={os.environ['GROUP_RANK']}, NODE_RANK={node}")
    if int(os.environ["PARC_GPU"]) != w["gpu"]:
        fail(f"PARC_GPU={os.environ['PARC_GPU']}, plan gpu {w['gpu']}")
    for k, v in plan.get("env", {}).items():
        if os.environ.get(k) != v:
            fail(f"{k}={os.environ.get(k)!r}, plan env says {v!r}")

    # Generous: on a loaded 2-core machine (several test runs at once) a rank
    # can be starved for a minute; the test checks membership, not speed.
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=180))
    if dist.get_rank() != rank or dist.get_world_size() != world:
        fail(f"torch sees rank {dist.get_rank()} of {dist.get_world_size()}")
    checked = 0
    # Every rank must call new_group for every group, in the same order.
    for family in sorted(plan["groups"]):
        for ranks in plan["groups"][family]:
            group = dist.new_group(ranks)
            if rank not in ranks:
                continue
            # [1, rank] summed over the group = [size, sum of its ranks]:
            # both together pin the membership down to the plan's list.
            t = torch.tensor([1.0, float(rank)])
            dist.all_reduce(t, group=group)
            if t.tolist() != [float(len(ranks)), float(sum(ranks))]:
                fail(f"{family} {ranks}: all_reduce gave {t.tolist()}")
            if dist.get_rank(group) != sorted(ranks).index(rank):
                fail(f"{family} {ranks}: group rank {dist.get_rank(group)}")
            checked += 1
    dist.barrier()
    print(f"OK rank={rank} node={node} local={local} groups={checked}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
