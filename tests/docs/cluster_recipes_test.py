"""The multi-worker recipes of docs/scaling-out.md hold together without a cluster: the Kubernetes manifest parses, its
pods find each other under the names its Job and Service give them, and each command it runs takes the flags it
passes (the apps' recorded flags, tests/apps/app_flags.json); the TF_CONFIG it computes is the one bert-tf-launch
prints. (PyYAML comes with huggingface_hub, a dependency of the package.)"""

import json
import os
import re
import shlex

import yaml

from bert_tf.apps import multiworker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFEST = os.path.join(ROOT, "docs", "recipes", "kubernetes-indexed-job.yaml")
APPS = {"bert-tf-launch": "bert_tf.apps.multiworker", "bert-tf-pretrain": "bert_tf.apps.pretrain"}


def _documents():
    with open(MANIFEST, encoding="utf-8") as f:
        documents = [d for d in yaml.safe_load_all(f) if d]
    return {d["kind"]: d for d in documents}


def _recorded_flags(app):
    with open(os.path.join(ROOT, "tests", "apps", "app_flags.json"), encoding="utf-8") as f:
        recorded = json.load(f)
    names = set(recorded.get(APPS[app], {}))
    if app == "bert-tf-pretrain":  # the shared training flags and the process flags (training_flags.py)
        from bert_tf.apps import training_flags
        from bert_tf.training.run_options import Optimization

        names |= {field.name for field in training_flags.dataclasses.fields(Optimization)}
        names |= set(training_flags.PROCESS_FLAGS)
    return names


def _commands(script):
    """(program, [flag names]) of each bert-tf-* command of the shell `script`."""
    joined = script.replace("\\\n", " ")
    found = []
    for match in re.finditer(r"(bert-tf-[a-z-]+)((?:\s+--[^\s)\"]+(?:\"[^\"]*\")?)+)", joined):
        flags = [arg.split("=", 1)[0][2:] for arg in shlex.split(match.group(2).replace('"', ""))]
        found.append((match.group(1), flags))
    return found


def test_the_manifest_wires_the_pods_to_each_other():
    documents = _documents()
    service, job = documents["Service"], documents["Job"]
    spec = job["spec"]
    pod = spec["template"]["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    assert pod["subdomain"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"job-name": job["metadata"]["name"]}
    (container,) = pod["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert int(env["WORKERS"]) == spec["completions"]
    port = service["spec"]["ports"][0]["port"]
    assert container["ports"][0]["containerPort"] == port
    script = container["args"][0]
    # The hosts it lists: the Job's pod names (JOB-INDEX) under the Service's subdomain.
    assert f'"${{hosts:+$hosts,}}{job["metadata"]["name"]}-${{i}}.{service["metadata"]["name"]}:{port}"' in script
    assert 'bert-tf-launch --print_tf_config --hosts="$hosts" --task_index="$JOB_COMPLETION_INDEX"' in script
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert all(path.startswith(mounts["shared"] + "/") for path in re.findall(r"--model_dir=(\S+)", script))


def test_the_manifests_commands_take_the_flags_it_passes():
    script = _documents()["Job"]["spec"]["template"]["spec"]["containers"][0]["args"][0]
    commands = _commands(script)
    assert [program for program, _ in commands] == ["bert-tf-launch", "bert-tf-pretrain"]
    for program, flags in commands:
        unknown = sorted(set(flags) - _recorded_flags(program))
        assert unknown == [], f"{program} has no flag {unknown}"
    assert "strategy" in commands[1][1] and "--strategy=multi_worker_mirrored" in script


def test_the_tf_config_each_pod_computes():
    """What the pod's loop lists for WORKERS=4, and the TF_CONFIG bert-tf-launch prints from it for index 2."""
    hosts = [f"bert-pretrain-{i}.bert-pretrain-workers:2222" for i in range(4)]
    assert multiworker.tf_config(hosts, 2) == {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": 2}}
