"""fleet/slurm: a one-node Slurm cluster on localhost (Debian's slurm-wlm and munge:
munged, slurmctld and slurmd in the foreground, no systemd, proctrack/linuxproc,
task/none, a fake GRES of 2 GPUs), a job array of shards (`phasegate shard run`, the
index from SLURM_ARRAY_TASK_ID) and a merge job with --dependency=afterany; the merged
verdicts are one local run's (docs/fleet.md "Slurm").

Exit 77 (skipped) when the packages are absent: `apt-get install slurm-wlm munge`
(tools/bootstrap.sh installs them), then `ctest -L slurm`.

    slurm.py PHASEGATE SOURCE_ROOT OP_DIR PLUGIN WORK_DIR
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

pg, root, op_dir, plugin, work = sys.argv[1:6]
need = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "sbatch", "sinfo"]
missing = [p for p in need if not shutil.which(p)]
if missing:
    print(f"[phasegate] SKIPPED: Slurm is not installed here ({', '.join(missing)} missing): "
          "apt-get install slurm-wlm munge (tools/bootstrap.sh installs them), then ctest -L slurm")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
for d in ("state", "spool", "logs", "shards"):
    os.makedirs(d)
failures = []
procs = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def stop():
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def finish(code):
    stop()
    for log in ("slurmctld.log", "slurmd.log", "munged.log"):
        if code and os.path.exists(log):
            print(f"--- {log} (last lines)\n" + "".join(open(log).readlines()[-15:]))
    sys.exit(code)


host = socket.gethostname().split(".")[0]
with open("munge.key", "wb") as f:
    f.write(os.urandom(1024))
os.chmod("munge.key", 0o400)
procs.append(subprocess.Popen(["/usr/sbin/munged", "--foreground", "--force", f"--key-file={work}/munge.key",
                               f"--socket={work}/munge.sock", f"--pid-file={work}/munged.pid",
                               f"--log-file={work}/munged.log", f"--seed-file={work}/munge.seed"]))
for g in ("gpu0", "gpu1"):  # a fake GRES: two "GPUs", files slurmd only stats
    open(g, "w").close()
with open("gres.conf", "w") as f:
    f.write(f"NodeName={host} Name=gpu File={work}/gpu0\nNodeName={host} Name=gpu File={work}/gpu1\n")
conf = f"""ClusterName=phasegate
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={work}/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
SlurmUser=root
SlurmdUser=root
ReturnToService=2
MpiDefault=none
NodeName={host} NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
open("slurm.conf", "w").write(conf)
os.environ["SLURM_CONF"] = f"{work}/slurm.conf"
time.sleep(0.5)
t_start = time.time()
procs.append(subprocess.Popen(["/usr/sbin/slurmctld", "-D", "-i", "-f", f"{work}/slurm.conf"],
                              stdout=open("slurmctld.out", "w"), stderr=subprocess.STDOUT))
procs.append(subprocess.Popen(["/usr/sbin/slurmd", "-D", "-f", f"{work}/slurm.conf"],
                              stdout=open("slurmd.out", "w"), stderr=subprocess.STDOUT))
up = False
for _ in range(60):
    p = subprocess.run(["sinfo", "-h", "-o", "%t"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.stdout.strip() == "idle":
        up = True
        break
    time.sleep(0.5)
check(up, f"the cluster is up in {time.time() - t_start:.1f} s: sinfo {p.stdout.strip()}")
if not up:
    finish(1)

# the mini project (tests/fleet/mini), its one local run, and the plan
B = os.path.join(work, "build")
os.symlink(plugin, "impl.so")
p = subprocess.run(["cmake", "-S", os.path.join(root, "tests/fleet/mini"), "-B", B, f"-DPG={pg}",
                    f"-DOP_DIR={op_dir}", f"-DIMPL={work}/impl.so", f"-DFLAG={work}/flaky.flag",
                    f"-DSESSION_SCRIPT={root}/cmake/PhaseGateSession.cmake"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
check(p.returncode == 0, "configure the mini project\n" + p.stdout)
open("flaky.flag", "w").close()  # one failing case: the merge's exit is 1, its gate's cases not run
subprocess.run(["ctest", "--test-dir", B, "--output-junit", f"{work}/single.xml"], stdout=subprocess.DEVNULL)
p = subprocess.run([pg, "shard", "plan", "--build-dir", B, "--shards", "3", "--out", "plan"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
check(p.returncode == 0, "shard plan\n" + p.stdout)

# the job array and the merge
p = subprocess.run(["sbatch", "--parsable", "--array=0-2", "--gres=gpu:1", "-o", f"{work}/logs/shard_%a.out",
                    "--wrap", f"echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; "
                              f"{pg} shard run --plan {work}/plan/plan.json --out {work}/shards/s$SLURM_ARRAY_TASK_ID"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
array = p.stdout.strip()
check(p.returncode == 0 and array.isdigit(), f"sbatch --array: {p.stdout}")
p = subprocess.run(["sbatch", "--parsable", f"--dependency=afterany:{array}", "-o", f"{work}/logs/merge.out",
                    "--wrap", f"{pg} merge --plan {work}/plan/plan.json --out {work}/M {work}/shards/s*; "
                              f"echo $? > {work}/merge.rc"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
check(p.returncode == 0, f"sbatch --dependency=afterany: {p.stdout}")
for _ in range(240):
    if os.path.exists("merge.rc") and open("merge.rc").read().strip():
        break
    time.sleep(0.5)
check(os.path.exists("merge.rc"), f"the merge job ran, {time.time() - t_start:.1f} s after the cluster started")
if not os.path.exists("merge.rc"):
    finish(1)


def verdicts(junit):
    out = {}
    for m in re.finditer(r'<testcase name="([^"]*)"[^>]*status="([a-z]*)"[^>]*>(.*?)</testcase>',
                         open(junit).read(), re.S):
        name, status, body = m.groups()
        out[name] = "p" if status == "run" else "f" if status == "fail" else \
            "s" if 'message="SKIP_' in body else "n"
    return out


rc = int(open("merge.rc").read())
merged, single = verdicts("M/junit.xml"), verdicts("single.xml")
check(rc == 1 and merged == single, f"merged verdict (exit {rc}) = one local run's\n {merged}\n {single}")
for k in range(3):
    m = json.load(open(f"shards/s{k}/manifest.json"))
    check(m["shard"] == k and "--index" not in m["ctest_command"], f"shard {k}: its index from SLURM_ARRAY_TASK_ID")
    log = open(f"logs/shard_{k}.out").read()
    cvd = re.search(r"CUDA_VISIBLE_DEVICES=(\S*)", log)
    if cvd and cvd.group(1):  # the fake GRES gave the task a device: the spec has it
        spec = json.load(open(f"shards/s{k}/resources.json"))
        check(m["devices"]["visible"] == cvd.group(1).split(",") and len(spec["local"][0]["gpus"]) == 1,
              f"shard {k}: resource spec from CUDA_VISIBLE_DEVICES={cvd.group(1)}: {spec}")
    else:
        print(f"note: shard {k}: Slurm set no CUDA_VISIBLE_DEVICES for the fake GRES")
print(f"timing: cluster start to merged verdict {time.time() - t_start:.1f} s")
finish(1 if failures else 0)
