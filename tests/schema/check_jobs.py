#!/usr/bin/env python3
"""Validates the scheduler jobs shardplan writes against the schemas they target.

usage: check_jobs.py SHARDPLAN_BINARY REPOSITORY_ROOT
`emit --k8s` (Kubeflow Trainer v2 TrainJob), `emit --skypilot` (SkyPilot task) and
`probe --job k8s` (Kubeflow MPIJob) are written for several plans and validated (Draft 2020-12)
against docs/schema/jobs/, each a restatement of the scheduler's own schema with its source and
commit; then the facts a schema cannot hold: nodes and GPUs per node as the plan says, the
launch script parses (bash -n), topology hints exactly where the plan's groups span hosts. A
document with one key misspelt must fail, so the schemas can fail. Exit 1 on any failure.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
    import yaml
except ImportError:
    sys.exit("check_jobs.py: python3-jsonschema and python3-yaml are needed: apt-get install "
             "python3-jsonschema python3-yaml (./build.sh test installs them)")

BIN, ROOT = sys.argv[1], sys.argv[2]
FAILURES = []
DOCUMENTS = []  # every document validated, by name


def schema(name):
    with open(os.path.join(ROOT, "docs", "schema", "jobs", name + ".schema.json")) as f:
        return json.load(f)


def run(args):
    r = subprocess.run([BIN] + args, capture_output=True, text=True)
    if r.returncode != 0:
        FAILURES.append(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return r


def validate(doc, name, what):
    DOCUMENTS.append(what)
    errors = sorted(jsonschema.Draft202012Validator(schema(name)).iter_errors(doc),
                    key=lambda e: list(e.path))
    for e in errors:
        FAILURES.append(f"{what}: {'/'.join(map(str, e.path))}: {e.message}")
    return not errors


def check(cond, what):
    if not cond:
        FAILURES.append(what)


def bash_parses(script, what):
    r = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    check(r.returncode == 0, f"{what}: bash -n: {r.stderr.strip()}")


EMITS = [
    # (flags, nodes, GPUs per node, whether tensor groups span hosts)
    (["--model", "llama-3.1-70b", "--cluster", "gb200-nvl72", "--gpus", "144", "--tp", "16",
      "--global-batch", "576", "--format", "megatron"], 36, 4, True),
    (["--model", "llama-2-7b", "--cluster", "dgx-h100", "--gpus", "16", "--zero", "3",
      "--global-batch", "64", "--format", "deepspeed"], 2, 8, False),
    (["--model", "llama-3.1-8b", "--cluster", "dgx-h100", "--gpus", "16", "--global-batch", "64",
      "--format", "torchtitan"], 2, 8, False),
    (["--model", "llama-3.1-8b", "--cluster", "dgx-h100", "--gpus", "16", "--global-batch", "64",
      "--format", "accelerate"], 2, 8, False),
]

with tempfile.TemporaryDirectory() as tmp:
    for i, (flags, nodes, per_node, spans) in enumerate(EMITS):
        what = " ".join(flags)
        k8s, sky = os.path.join(tmp, f"{i}.k8s.yaml"), os.path.join(tmp, f"{i}.sky.yaml")
        r = run(["emit"] + flags + ["-o", os.path.join(tmp, f"{i}.cfg"), "--k8s", k8s,
                                    "--skypilot", sky, "--queue", "team-a"])
        if r.returncode != 0:
            continue
        with open(k8s) as f:
            job = yaml.safe_load(f)
        if validate(job, "trainjob-v1alpha1", f"TrainJob for {what}"):
            t = job["spec"]["trainer"]
            check(t["numNodes"] == nodes, f"TrainJob for {what}: numNodes {t['numNodes']}")
            check(t["numProcPerNode"] == per_node, f"TrainJob for {what}: numProcPerNode")
            check(t["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == per_node,
                  f"TrainJob for {what}: GPUs per node")
            check(t["command"][:2] == ["bash", "-c"], f"TrainJob for {what}: command")
            bash_parses(t["command"][2], f"TrainJob for {what}")
            check(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a",
                  f"TrainJob for {what}: Kueue queue")
            check(("runtimePatches" in job["spec"]) == spans,
                  f"TrainJob for {what}: topology patch {'missing' if spans else 'unexpected'}")
            envs = {e["name"]: e["value"] for e in t["env"]}
            check(envs.get("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1", f"TrainJob for {what}: env")
            if "deepspeed" in flags:
                check("DEEPSPEED_TIMEOUT" in envs, f"TrainJob for {what}: DEEPSPEED_TIMEOUT")
            # The schema can fail: one misspelt key.
            bad = copy.deepcopy(job)
            bad["spec"]["trainer"]["numNode"] = bad["spec"]["trainer"].pop("numNodes")
            check(list(jsonschema.Draft202012Validator(schema("trainjob-v1alpha1"))
                       .iter_errors(bad)), "TrainJob schema accepted a misspelt numNodes")
        with open(sky) as f:
            task = yaml.safe_load(f)
        if validate(task, "skypilot-task", f"SkyPilot task for {what}"):
            check(task["num_nodes"] == nodes, f"SkyPilot task for {what}: num_nodes")
            check(task["resources"]["accelerators"].endswith(f":{per_node}"),
                  f"SkyPilot task for {what}: accelerators {task['resources']['accelerators']}")
            check(task["resources"]["job_recovery"]["max_restarts_on_errors"] == 10,
                  f"SkyPilot task for {what}: job recovery")
            bash_parses(task["run"], f"SkyPilot task for {what}")
            bad = copy.deepcopy(task)
            bad["resources"]["accelerator"] = bad["resources"].pop("accelerators")
            check(list(jsonschema.Draft202012Validator(schema("skypilot-task"))
                       .iter_errors(bad)), "SkyPilot schema accepted a misspelt accelerators")

    # The probe as an MPIJob, on 64 NVL72 nodes (18 per domain) and on 16 H100s (--gpus: 2 nodes).
    for cluster, size, nodes, per_node, domain in (("gb200-nvl72", ["--nodes", "64"], 64, 4, 18),
                                                   ("dgx-h100", ["--gpus", "16"], 2, 8, 1)):
        out = os.path.join(tmp, f"mpijob-{cluster}.yaml")
        r = run(["probe", "--job", "k8s", "--job-out", out] + size + ["--cluster",
                 cluster, "--image", "registry.example/shardplan:1", "--volume-claim", "probes",
                 "--out", "/profiles/probe.json"])
        if r.returncode != 0:
            continue
        with open(out) as f:
            job = yaml.safe_load(f)
        what = f"MPIJob on {nodes} {cluster} nodes"
        if validate(job, "mpijob-v2beta1", what):
            spec = job["spec"]
            check(spec["slotsPerWorker"] == per_node, f"{what}: slotsPerWorker")
            worker = spec["mpiReplicaSpecs"]["Worker"]
            check(worker["replicas"] == nodes, f"{what}: worker replicas")
            check(worker["template"]["spec"]["containers"][0]["resources"]["limits"]
                  ["nvidia.com/gpu"] == per_node, f"{what}: GPUs per worker")
            check(spec["runPolicy"]["activeDeadlineSeconds"] > 0, f"{what}: no time bound")
            cmd = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
            check(cmd[:4] == ["mpirun", "--allow-run-as-root", "-np", str(nodes * per_node)],
                  f"{what}: launcher command {cmd[:4]}")
            check("/profiles/probe.json" in cmd, f"{what}: --out not passed to the probe")
            check("--job" not in cmd and "--image" not in cmd and "--gpus" not in cmd,
                  f"{what}: job flags left in the probe")
            hint = worker["template"].get("metadata", {}).get("annotations", {})
            check(("kueue.x-k8s.io/podset-preferred-topology" in hint) == (domain > 1),
                  f"{what}: topology hint")
            bad = copy.deepcopy(job)
            bad["spec"]["runPolicy"]["cleanPodPolicy"] = "Sometimes"
            check(list(jsonschema.Draft202012Validator(schema("mpijob-v2beta1")).iter_errors(bad)),
                  "MPIJob schema accepted cleanPodPolicy Sometimes")

    # The probe as a Slurm script: an NVL72 rack's 18 nodes come together (--segment), the time
    # is bounded, the script parses, the job flags stay out of the probe's own line.
    out = os.path.join(tmp, "probe.sbatch")
    if run(["probe", "--job", "slurm", "--job-out", out, "--nodes", "36", "--cluster",
            "gb200-nvl72", "--out", "/shared/probe.json", "--image", "nvcr.io/x/y:1"]
           ).returncode == 0:
        DOCUMENTS.append("Slurm probe job")
        with open(out) as f:
            text = f.read()
        bash_parses(text, "Slurm probe job")
        for line in ("#SBATCH --nodes=36", "#SBATCH --ntasks-per-node=4", "#SBATCH --gpus-per-node=4",
                     "#SBATCH --segment=18", "srun --mpi=pmix --kill-on-bad-exit=1 "
                     "--container-image=nvcr.io/x/y:1 --container-mounts=/shared/:/shared/ "
                     "shardplan probe --out /shared/probe.json --cluster gb200-nvl72"):
            check(line in text, f"Slurm probe job: no '{line}'")
        check("#SBATCH --time=" in text, "Slurm probe job: no time bound")

for f in FAILURES:
    print("FAIL:", f)
failed = {d for d in DOCUMENTS if any(f.startswith(d) for f in FAILURES)}
print(f"{len(DOCUMENTS) - len(failed)} passed, {len(failed)} failed")
sys.exit(1 if FAILURES else 0)
