package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// k8sOut runs a k8s subcommand and returns what it wrote, failing t on an
// error.
func k8sOut(t *testing.T, env Env, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	env.Stdout, env.Stderr = &out, &errb
	if env.Now == nil {
		env.Now = time.Now
	}
	if code := Main(t.Context(), args, env); code != 0 {
		t.Fatalf("goodput %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// docs decodes every YAML document of a manifest stream.
func docs(t *testing.T, stream string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(stream))
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("the manifests are not YAML: %v\n%s", err, stream)
		}
		if d != nil {
			out = append(out, d)
		}
	}
}

// dig walks a decoded document by keys (and list indexes).
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// The emitted manifests are valid in what matters: every document has
// apiVersion, kind and a named metadata; the Job is Indexed with
// completions = parallelism = N, its pods spread over nodes, sized, and
// told --shards N and the rendezvous; the key is a secretKeyRef, its value
// nowhere; the dataset a ConfigMap.
func TestK8sJobManifests(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(`{"prompt":"hi","output_tokens":4}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "sk-test-key-that-must-not-leak"
	env := Env{Dir: dir, Getenv: func(k string) string {
		if k == "OPENAI_API_KEY" {
			return key
		}
		return ""
	}}
	for _, n := range []int{1, 3, 8} {
		t.Run(fmt.Sprint(n, " shards"), func(t *testing.T) {
			out := k8sOut(t, env, "k8s", "job", "--shards", fmt.Sprint(n), "--base-url", "http://vllm:8000", "--api-key-secret", "llm/api-key",
				"--namespace", "load", "--", "--request-rate", "100", "--dataset-name", "custom", "--dataset-path", "p.jsonl")
			if strings.Contains(out, key) {
				t.Fatalf("the manifests hold the API key")
			}
			kinds := map[string]map[string]any{}
			for _, d := range docs(t, out) {
				if d["apiVersion"] == nil || d["kind"] == nil || dig(d, "metadata", "name") == nil {
					t.Errorf("document without apiVersion, kind or metadata.name: %v", d)
				}
				if dig(d, "metadata", "namespace") != "load" {
					t.Errorf("%v in namespace %v; want load", d["kind"], dig(d, "metadata", "namespace"))
				}
				kinds[d["kind"].(string)] = d
			}
			job := kinds["Job"]
			if job == nil || kinds["Service"] == nil || kinds["ConfigMap"] == nil {
				t.Fatalf("kinds %v; want a Job, a Service and a ConfigMap", kinds)
			}
			spec := job["spec"]
			if dig(spec, "completionMode") != "Indexed" || dig(spec, "completions") != n || dig(spec, "parallelism") != n {
				t.Errorf("job spec %v; want Indexed, completions = parallelism = %d", spec, n)
			}
			pod := dig(spec, "template", "spec")
			c := dig(pod, "containers", 0)
			args := fmt.Sprint(dig(c, "args"))
			for _, want := range []string{"bench --base-url http://vllm:8000 --shards " + fmt.Sprint(n), "--rendezvous goodput-bench-0.goodput-bench:7077",
				"--dataset-path /workload/p.jsonl", "--request-rate 100"} {
				if !strings.Contains(args, want) {
					t.Errorf("args %s lack %q", args, want)
				}
			}
			if dig(pod, "subdomain") != "goodput-bench" || dig(kinds["Service"], "spec", "clusterIP") != "None" {
				t.Errorf("the pods' subdomain %v, the Service's clusterIP %v; want the headless Service's name, None",
					dig(pod, "subdomain"), dig(kinds["Service"], "spec", "clusterIP"))
			}
			if dig(pod, "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", 0, "podAffinityTerm", "topologyKey") != "kubernetes.io/hostname" {
				t.Errorf("affinity %v; want the pods spread over nodes", dig(pod, "affinity"))
			}
			for _, kind := range []string{"requests", "limits"} {
				if dig(c, "resources", kind, "cpu") == nil || dig(c, "resources", kind, "memory") == nil {
					t.Errorf("resources %v; want cpu and memory %s", dig(c, "resources"), kind)
				}
			}
			ref := dig(c, "env", 0, "valueFrom", "secretKeyRef")
			if dig(c, "env", 0, "name") != "OPENAI_API_KEY" || dig(ref, "name") != "llm" || dig(ref, "key") != "api-key" || dig(c, "env", 0, "value") != nil {
				t.Errorf("env %v; want OPENAI_API_KEY from secretKeyRef llm/api-key, no value", dig(c, "env"))
			}
			if dig(pod, "securityContext", "runAsNonRoot") != true || dig(c, "securityContext", "readOnlyRootFilesystem") != true {
				t.Errorf("security %v / %v; want non-root, a read-only root", dig(pod, "securityContext"), dig(c, "securityContext"))
			}
			if dig(kinds["ConfigMap"], "data", "p.jsonl") == nil {
				t.Errorf("ConfigMap %v; want the dataset under p.jsonl", kinds["ConfigMap"])
			}
		})
	}
}

// A fixed --start-at replaces the rendezvous, and is checked as bench
// checks it.
func TestK8sJobStartAt(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	env := Env{Now: func() time.Time { return now }}
	out := k8sOut(t, env, "k8s", "job", "--shards", "2", "--base-url", "http://x:1", "--start-at", "2026-12-01T10:05:00Z")
	if !strings.Contains(out, "- --start-at\n") || strings.Contains(out, "--rendezvous") {
		t.Errorf("manifests with --start-at:\n%s\nwant the start, no rendezvous", out)
	}
	var errb bytes.Buffer
	env.Stdout, env.Stderr = io.Discard, &errb
	if code := Main(t.Context(), []string{"k8s", "job", "--shards", "2", "--base-url", "http://x:1", "--start-at", "2026-12-01T09:00:00Z"}, env); code != ExitUsage ||
		!strings.Contains(errb.String(), "in the past") {
		t.Errorf("a past --start-at: exit %d, %q; want a usage error saying it is past", code, errb.String())
	}
}

// Every mistake in the k8s commands' flags is a usage error whose one line
// names the flag (the k8s package's errors name its spec's fields; cli maps
// them), and a mistake in the objects' own fields is found before bench's
// flags are read.
func TestK8sFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for name, b := range map[string][]byte{"bin.jsonl": {0xff, 0xfe, '\n'}, "big.jsonl": bytes.Repeat([]byte("a"), 1100000), "bad name.jsonl": []byte("{}\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const nameRule = "want lowercase letters, digits and '-', starting and ending with a letter or digit, short enough that "
	const secretRule = "want NAME/KEY, the Secret's name and the key in it holding the API key"
	job := []string{"k8s", "job", "--shards", "2", "--base-url", "http://x"}
	collect := []string{"k8s", "collect", "--shards", "2", "--records-claim", "r"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"shards", []string{"k8s", "job", "--shards", "0", "--base-url", "http://x"}, `--shards 0: want 1 to 10000 pods`},
		{"image", append(job, "--image", ""), `--image "": want an image reference`},
		{"image first", append(job, "--image", "", "--cpu", "bad"), `--image "": want an image reference`},
		{"cpu", append(job, "--cpu", "2x"), `--cpu "2x": want a CPU quantity, e.g. 2 or 500m`},
		{"memory", append(job, "--memory", "lots"), `--memory "lots": want a memory quantity, e.g. 1Gi`},
		{"port", append(job, "--port", "0"), `--port 0: want 1 to 65535`},
		{"spread", append(job, "--spread", ""), `--spread "": want preferred or required`},
		{"claim", append(job, "--records-claim", "Bad_Claim"), `--records-claim "Bad_Claim": want a PersistentVolumeClaim's name`},
		{"name", append(job, "--name", "Bad_Name"), `--name "Bad_Name": ` + nameRule + `"Bad_Name-1" is at most 63 characters`},
		{"namespace", append(job, "--namespace", "Bad_NS"), `--namespace "Bad_NS": want a DNS label (lowercase letters, digits, '-')`},
		{"name before bench's flags", append(job, "--name", "X", "--", "--no-such-flag"), `--name "X": ` + nameRule + `"X-1" is at most 63 characters`},
		{"secret without a key", append(job, "--api-key-secret", "nokey"), `--api-key-secret "nokey": ` + secretRule},
		{"secret /", append(job, "--api-key-secret", "/"), `--api-key-secret "/": ` + secretRule},
		{"secret's key", append(job, "--api-key-secret", "ok/bad key"), `--api-key-secret "ok/bad key": ` + secretRule},
		{"secret's name", append(job, "--api-key-secret", "Bad/key"), `--api-key-secret "Bad/key": ` + secretRule},
		{"no key variable", append(job, "--api-key-secret", "ok/key", "--", "--api-key-env", ""), `--api-key-secret needs bench's --api-key-env to name the variable the key goes in`},
		{"bench's flags before the secret", append(job, "--api-key-secret", "bad", "--", "--no-flag"), `bench flag after --: unknown flag: --no-flag`},
		{"dataset not UTF-8", append(job, "--", "--dataset-name", "custom", "--dataset-path", "bin.jsonl"), `--dataset-path bin.jsonl: not UTF-8 text, which a ConfigMap's data must be`},
		{"dataset too big", append(job, "--", "--dataset-name", "custom", "--dataset-path", "big.jsonl"),
			`--dataset-path big.jsonl: 1100000 bytes; a ConfigMap holds about 1 MiB: put the file in an image or a volume and give its path in the pod`},
		{"dataset's name", append(job, "--", "--dataset-name", "custom", "--dataset-path", "bad name.jsonl"),
			`--dataset-path bad name.jsonl: a ConfigMap key allows letters, digits, '-', '_' and '.': rename the file`},
		{"collect without a claim", []string{"k8s", "collect", "--shards", "2", "--image", ""},
			`--records-claim: give the claim the shards wrote their records to (without one, read them from the pods' logs: see docs/scale-out.md)`},
		{"collect shards", []string{"k8s", "collect", "--shards", "0", "--records-claim", "r"}, `--shards 0: want 1 to 10000`},
		{"collect claim", []string{"k8s", "collect", "--shards", "2", "--records-claim", "Bad"}, `--records-claim "Bad": want a PersistentVolumeClaim's name`},
		{"collect image", append(collect, "--image", ""), `--image "": want an image reference`},
		{"collect name", append(collect, "--name", "Bad"), `--name "Bad": ` + nameRule + `"Bad-1" is at most 63 characters`},
		{"collect namespace", append(collect, "--namespace", "Bad"), `--namespace "Bad": want a DNS label (lowercase letters, digits, '-')`},
		{"collect's name before report's flags", append(collect, "--name", "Bad", "--", "--no-flag"), `--name "Bad": ` + nameRule + `"Bad-1" is at most 63 characters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			env := Env{Dir: dir, Stdout: &out, Stderr: &errb, Now: time.Now}
			code := Main(t.Context(), tc.args, env)
			if want := "goodput: " + tc.want + "\n"; code != ExitUsage || errb.String() != want || out.Len() != 0 {
				t.Errorf("goodput %s: exit %d, stderr %q, %d bytes out; want exit %d, stderr %q, nothing out",
					strings.Join(tc.args, " "), code, errb.String(), out.Len(), ExitUsage, want)
			}
		})
	}
}

// fakeAPIServer answers kubectl's discovery of the kinds the manifests use
// (nothing else), so kubectl create --dry-run=client can run without a
// cluster.
func fakeAPIServer(t *testing.T) string {
	t.Helper()
	j := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}
	}
	res := func(name, kind string) string {
		return fmt.Sprintf(`{"name":%q,"singularName":%q,"namespaced":true,"kind":%q,"verbs":["create","get","list"]}`, name, strings.ToLower(kind), kind)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api", j(`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`))
	mux.HandleFunc("/apis", j(`{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"}],"preferredVersion":{"groupVersion":"batch/v1","version":"v1"}}]}`))
	mux.HandleFunc("/api/v1", j(`{"kind":"APIResourceList","groupVersion":"v1","resources":[`+res("configmaps", "ConfigMap")+`,`+res("services", "Service")+`]}`))
	mux.HandleFunc("/apis/batch/v1", j(`{"kind":"APIResourceList","groupVersion":"batch/v1","resources":[`+res("jobs", "Job")+`]}`))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// kubectl itself reads the manifests: create --dry-run=client decodes each
// document as its kind. Without a cluster there is no schema to validate
// against (--validate=false): kubectl checks the YAML, the kinds and their
// API versions; TestK8sJobManifests checks the fields.
func TestK8sManifestsKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed (Debian's kubernetes-client package has it; .ci/run installs it)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(`{"prompt":"hi"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	api := fakeAPIServer(t)
	env := Env{Dir: dir}
	for _, args := range [][]string{
		{"k8s", "job", "--shards", "4", "--base-url", "http://vllm:8000", "--api-key-secret", "llm/key", "--", "--dataset-name", "custom", "--dataset-path", "p.jsonl"},
		{"k8s", "job", "--shards", "2", "--base-url", "http://vllm:8000", "--records-claim", "results", "--spread", "required"},
		{"k8s", "collect", "--shards", "2", "--records-claim", "results"},
	} {
		manifests := k8sOut(t, env, args...)
		cmd := exec.CommandContext(t.Context(), kubectl, "create", "--dry-run=client", "--validate=false", "-o", "yaml", "-s", api, "-f", "-")
		cmd.Stdin = strings.NewReader(manifests)
		cfg := filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(cfg, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cfg)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl create --dry-run=client on goodput %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, d := range docs(t, manifests) {
			if !regexp.MustCompile(`(?m)^kind: ` + d["kind"].(string) + `$`).Match(out) {
				t.Errorf("kubectl's output lacks the %v: %s", d["kind"], out)
			}
		}
	}
}

// The Dockerfile builds a static binary in a builder stage and runs it as
// a non-root user on a distroless or scratch base (docker itself may be
// absent or offline here; this reads the file).
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)(\s+AS\s+(\S+))?`).FindAllStringSubmatch(text, -1)
	if len(froms) < 2 {
		t.Fatalf("%d FROM lines; want a builder stage and a final one", len(froms))
	}
	if froms[0][3] == "" || !strings.Contains(froms[0][1], "golang") {
		t.Errorf("first stage %q; want a named golang builder stage", froms[0][0])
	}
	final := froms[len(froms)-1][1]
	if !strings.HasPrefix(final, "gcr.io/distroless/") && final != "scratch" {
		t.Errorf("final base %q; want distroless or scratch", final)
	}
	finalStage := text[strings.LastIndex(text, "\nFROM"):]
	for _, re := range []string{`CGO_ENABLED=0`, `go build`} {
		if !regexp.MustCompile(re).MatchString(text[:strings.LastIndex(text, "\nFROM")]) {
			t.Errorf("the builder stage lacks %s", re)
		}
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(finalStage)
	if user == nil || user[1] == "root" || user[1] == "0" || strings.HasPrefix(user[1], "0:") {
		t.Errorf("final stage user %v; want a non-root USER", user)
	}
	if !regexp.MustCompile(`(?m)^COPY --from=`).MatchString(finalStage) || !regexp.MustCompile(`(?m)^ENTRYPOINT `).MatchString(finalStage) {
		t.Errorf("the final stage should copy the binary from the builder and run it as the entrypoint")
	}
}
