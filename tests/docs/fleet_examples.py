"""docs/fleet_examples: the example files docs/fleet.md shows (docs/fleet/) load and make
sense: the YAML parses (Kubernetes: Indexed Jobs asking for nvidia.com/gpu and
huawei.com/Ascend910 with one shared volume; GitHub Actions: a plan job, a matrix of
shards, a merge job that runs whatever the shards did), the shell script passes
`bash -n`, and every phasegate command any of them (or docs/fleet.md) names exists,
with only options its --help lists.

    fleet_examples.py PHASEGATE SOURCE_ROOT
"""
import os
import re
import subprocess
import sys

import yaml

pg, root = sys.argv[1:3]
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


d = os.path.join(root, "docs/fleet")
texts = {}
k8s = list(yaml.safe_load_all(open(os.path.join(d, "k8s_indexed_job.yaml"))))
texts["k8s_indexed_job.yaml"] = list(strings(k8s))
jobs = [j for j in k8s if j and j.get("kind") == "Job"]
indexed = [j for j in jobs if j["spec"].get("completionMode") == "Indexed"]
limits = [c.get("resources", {}).get("limits", {}) for j in indexed for c in j["spec"]["template"]["spec"]["containers"]]
check(len(indexed) == 2 and any("nvidia.com/gpu" in l for l in limits)
      and any("huawei.com/Ascend910" in l for l in limits), "k8s: Indexed Jobs for nvidia.com/gpu and huawei.com/Ascend910")
for j in jobs:
    pod = j["spec"]["template"]["spec"]
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod.get("volumes", []) if "persistentVolumeClaim" in v}
    mounts = {m["mountPath"] for c in pod["containers"] for m in c.get("volumeMounts", [])}
    check(claims == {"phasegate-runs"} and "/shared" in mounts, f"k8s: {j['metadata']['name']} mounts the shared volume")
check(any("$(JOB_COMPLETION_INDEX)" in s for s in texts["k8s_indexed_job.yaml"]), "k8s: the shard directory per index")

gh = yaml.safe_load(open(os.path.join(d, "github_matrix.yml")))
texts["github_matrix.yml"] = list(strings(gh))
gj = gh["jobs"]
check(set(gj) == {"plan", "shard", "merge"} and gj["shard"]["needs"] == "plan"
      and gj["shard"]["strategy"]["matrix"]["index"] == [0, 1, 2, 3]
      and "shard" in gj["merge"]["needs"] and gj["merge"]["if"] == "always()",
      "github: plan, a matrix of 4 shards, a merge after them whatever they did")
check(any("TEST_SHARD_INDEX" in (s.get("env") or {}) for s in gj["shard"]["steps"]), "github: TEST_SHARD_INDEX per shard")

sh = os.path.join(d, "sbatch_array.sh")
p = subprocess.run(["bash", "-n", sh], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
check(p.returncode == 0, "sbatch_array.sh: bash -n\n" + p.stdout)
body = open(sh).read().replace("\\\n", " ")
texts["sbatch_array.sh"] = [body]
check("--array=" in body and "--dependency=\"afterany:" in body and "SLURM_ARRAY_TASK_ID" in body,
      "sbatch: a job array and an afterany merge")
doc = open(os.path.join(root, "docs/fleet.md")).read()
texts["docs/fleet.md"] = ["\n".join(re.findall(r"```[a-z]*\n(.*?)```", doc, re.S)).replace("\\\n", " ")]
for name in ("sbatch_array.sh", "k8s_indexed_job.yaml", "github_matrix.yml"):
    check(f"fleet/{name}" in doc, f"docs/fleet.md shows {name}")

# every phasegate command named, with its options
CMD = re.compile(r"(?:\$PG|\$\{PHASEGATE\}|phasegate) +(shard +(?:plan|run)|merge|report|run|list|validate)\b([^;\n|&]*)")
helps = {}
seen = 0
for where, ss in texts.items():
    for s in ss:
        for m in CMD.finditer(s):
            cmd = m.group(1).split()
            key = " ".join(cmd)
            if key not in helps:
                p = subprocess.run([pg, *cmd, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                helps[key] = (p.returncode, p.stdout)
            rc, text = helps[key]
            opts = re.findall(r"(?<![\w-])--[a-z][a-z-]*", m.group(2))
            bad = [o for o in opts if not re.search(re.escape(o) + r"\b", text)]
            seen += 1
            check(rc == 0 and not bad, f"{where}: phasegate {key} exists with {opts} (unknown: {bad})")
check(seen >= 8, f"{seen} phasegate commands checked")
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("docs/fleet_examples: all checks passed")
