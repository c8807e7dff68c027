package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The deployment files of deploy/ and the Dockerfile are checked here as
// far as this machine allows: the manifest parses and its probes, grace
// period and budget fit the binary; the image's health check is a command
// of the binary that works; the systemd unit passes systemd-analyze.

// manifestDocs decodes every document of deploy/kubernetes.yaml (a
// duplicate key is an error) by kind.
func manifestDocs(t *testing.T) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../deploy/kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	docs := map[string]map[string]any{}
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("deploy/kubernetes.yaml: %v", err)
		}
		kind, _ := doc["kind"].(string)
		if kind == "" || doc["apiVersion"] == nil || dig(doc, "metadata", "name") == nil {
			t.Fatalf("a document without kind, apiVersion or metadata.name: %v", doc)
		}
		docs[kind] = doc
	}
	return docs
}

// dig returns the value at path in nested maps and lists (an int indexes
// a list), nil if there is none.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// TestKubernetesManifest: the Deployment probes /healthz (liveness,
// start-up) and /readyz (readiness) on the port the node listens on, and
// a node answers both; the grace period outlasts the drain; the
// PodDisruptionBudget selects the Deployment's pods.
func TestKubernetesManifest(t *testing.T) {
	t.Parallel()
	docs := manifestDocs(t)
	dep, pdb := docs["Deployment"], docs["PodDisruptionBudget"]
	if dep == nil || pdb == nil {
		t.Fatalf("want a Deployment and a PodDisruptionBudget, have %v", keys(docs))
	}
	c := dig(dep, "spec", "template", "spec", "containers", 0)
	env := map[string]string{}
	for _, e := range dig(c, "env").([]any) {
		name, _ := dig(e, "name").(string)
		value, _ := dig(e, "value").(string)
		env[name] = value
	}
	if port := dig(c, "ports", 0, "containerPort"); env["SUNDIAL_LISTEN"] != fmt.Sprintf("0.0.0.0:%v", port) {
		t.Errorf("SUNDIAL_LISTEN %q, container port %v", env["SUNDIAL_LISTEN"], port)
	}
	portName := dig(c, "ports", 0, "name")

	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	for probe, want := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		path := dig(c, probe, "httpGet", "path")
		if path != want || dig(c, probe, "httpGet", "port") != portName {
			t.Errorf("%s: GET %v on port %v, want %s on %v", probe, path, dig(c, probe, "httpGet", "port"), want, portName)
			continue
		}
		n.do(t, "GET", want, "", 200, nil)
	}

	drain := defaultConfig().Scheduler.DrainTimeout
	if v := env["SUNDIAL_SCHEDULER_DRAIN_TIMEOUT"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		drain = d
	}
	grace, _ := dig(dep, "spec", "template", "spec", "terminationGracePeriodSeconds").(int)
	if time.Duration(grace)*time.Second < drain+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds %d: want at least the drain timeout (%s) and 10 s", grace, drain)
	}
	labels := dig(dep, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range dig(pdb, "spec", "selector", "matchLabels").(map[string]any) {
		if labels[k] != v {
			t.Errorf("the PodDisruptionBudget selects %s=%v; the pods have %v", k, v, labels)
		}
	}
	if dig(pdb, "spec", "maxUnavailable") == nil && dig(pdb, "spec", "minAvailable") == nil {
		t.Error("the PodDisruptionBudget bounds nothing")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDockerfile: the image builds the binary without cgo and runs it as a
// user, not root; its HEALTHCHECK is a command of the binary that passes
// against a running node and fails against none.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"CGO_ENABLED=0 go build", "FROM gcr.io/distroless/static", "\nUSER 65532:65532\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	_, check, ok := strings.Cut(strings.ReplaceAll(text, "\\\n", " "), "\nHEALTHCHECK ")
	check, _, _ = strings.Cut(check, "\n")
	_, cmd, ok2 := strings.Cut(check, " CMD ")
	var argv []string
	if !ok || !ok2 || json.Unmarshal([]byte(strings.TrimSpace(cmd)), &argv) != nil || len(argv) < 2 || argv[0] != "/usr/local/bin/sundial" {
		t.Fatalf("HEALTHCHECK %q: want CMD [\"/usr/local/bin/sundial\", ...]", check)
	}
	args := argv[1:]
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	for i, a := range args {
		if a == "--url" && i+1 < len(args) {
			args[i+1] = n.url // the image's node listens on 127.0.0.1:8080
		}
	}
	if res := runArgs(t, args...); res.err != nil || !strings.Contains(res.stdout, "/healthz") {
		t.Errorf("%v against a running node: %v, %q", args, res.err, res.stdout)
	}
	if res := runArgs(t, "health", "--url", n.url, "--ready"); res.err != nil || !strings.Contains(res.stdout, "/readyz") {
		t.Errorf("health --ready: %v, %q", res.err, res.stdout)
	}
	if res := runArgs(t, "health", "--url", "http://127.0.0.1:1", "--timeout", "2s"); res.err == nil || exitCode(res.err) != 1 {
		t.Errorf("health against no node: %v, want a failure with exit 1", res.err)
	}
	if res := runArgs(t, "health", "--url", "ftp://x"); exitCode(res.err) != 2 {
		t.Errorf("health --url ftp://x: %v, want exit 2", res.err)
	}
}

// TestDockerBuild builds the image where a container engine answers. It
// is skipped elsewhere, in CI too: the CI machine has no container engine
// (TestDockerfile checks what it can without one).
func TestDockerBuild(t *testing.T) {
	t.Parallel()
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker command: the image is not built here (TestDockerfile checks the Dockerfile)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, docker, "info").CombinedOutput(); err != nil {
		t.Skipf("no container engine answers docker info (%v: %s): the image is not built here", err, oneLine(string(out)))
	}
	cmd := exec.CommandContext(t.Context(), docker, "build", "-q", "-t", "sundial:test", "../..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
}

// TestSystemdUnit: deploy/sundial.service is hardened as docs/deploy.md
// says, stops within its drain, and passes systemd-analyze verify (with
// ExecStart pointed at a binary built from this tree).
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		skipOrFail(t, "systemd-analyze is not on PATH: the unit is not verified")
	}
	data, err := os.ReadFile("../../deploy/sundial.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(data)
	for _, want := range []string{"DynamicUser=yes", "StateDirectory=sundial", "ProtectSystem=strict", "Restart=on-failure",
		"NoNewPrivileges=yes", "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service",
		"ExecStart=/usr/local/bin/sundial serve\n", "SUNDIAL_DB=sqlite:/var/lib/sundial/sundial.db"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	_, stop, _ := strings.Cut(unit, "\nTimeoutStopSec=")
	stop, _, _ = strings.Cut(stop, "\n")
	if d, err := time.ParseDuration(stop); err != nil || d < defaultConfig().Scheduler.DrainTimeout+10*time.Second {
		t.Errorf("TimeoutStopSec=%s: want at least the drain timeout and 10 s", stop)
	}
	path := filepath.Join(t.TempDir(), "sundial.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/local/bin/sundial", sundialBinary(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
