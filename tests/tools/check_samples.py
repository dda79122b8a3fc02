#!/usr/bin/env python3
"""Checks that each CRD is structural and that each sample validates against its CRD's schema.

Usage: check_samples.py CRD_DIR SAMPLES_YAML
No ready tool does this offline (kubernetes-validate knows only built-in kinds), so this
applies the rules of Kubernetes' structural schemas and validates with jsonschema, turning
OpenAPI's `nullable: true` into JSON Schema's `null` type. Prints every problem, exits 1 if any.
"""

import copy
import glob
import os
import sys

import jsonschema
import yaml


def structural_problems(schema, path, root=True):
    problems = []
    if not isinstance(schema, dict):
        return [f"{path}: not an object"]
    if "$ref" in schema:
        problems.append(f"{path}: $ref is not allowed")
    free = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    if not schema.get("type") and not free:
        problems.append(f"{path}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: properties and additionalProperties together")
    for name, sub in (schema.get("properties") or {}).items():
        problems += structural_problems(sub, f"{path}.{name}", False)
    if "items" in schema:
        problems += structural_problems(schema["items"], f"{path}[]", False)
    if isinstance(schema.get("additionalProperties"), dict):
        problems += structural_problems(schema["additionalProperties"], f"{path}{{}}", False)
    return problems


def to_json_schema(schema):
    schema = copy.deepcopy(schema)

    def walk(node):
        if not isinstance(node, dict):
            return
        if node.pop("nullable", False) and "type" in node:
            node["type"] = [node["type"], "null"]
        for sub in (node.get("properties") or {}).values():
            walk(sub)
        for key in ("items", "additionalProperties"):
            walk(node.get(key))

    walk(schema)
    return schema


def main():
    crd_dir, samples_file = sys.argv[1], sys.argv[2]
    problems, schemas = [], {}
    crd_files = sorted(glob.glob(os.path.join(crd_dir, "*.yaml")))
    for crd_file in crd_files:
        crd = yaml.safe_load(open(crd_file))
        if crd.get("kind") != "CustomResourceDefinition":
            problems.append(f"{crd_file}: not a CustomResourceDefinition")
            continue
        spec = crd["spec"]
        for version in spec["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            problems += [f"{crd_file}: {p}" for p in structural_problems(schema, "openAPIV3Schema")]
            api_version = f"{spec['group']}/{version['name']}"
            schemas[(api_version, spec["names"]["kind"])] = to_json_schema(schema)
    samples = [s for s in yaml.safe_load_all(open(samples_file)) if s]
    for sample in samples:
        key = (sample.get("apiVersion"), sample.get("kind"))
        name = f"{key[1]} {sample.get('metadata', {}).get('name')}"
        if key not in schemas:
            problems.append(f"sample {name}: no CRD for {key[0]}, kind {key[1]}")
            continue
        validator = jsonschema.Draft7Validator(schemas[key])
        problems += [f"sample {name}: {e.json_path}: {e.message}" for e in validator.iter_errors(sample)]
    for problem in problems:
        print(problem)
    print(f"{len(crd_files)} CRDs, {len(samples)} samples, {len(problems)} problems")
    if not crd_files or not samples:
        print("nothing to check")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
