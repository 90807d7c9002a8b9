package deploy

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agencysync/agencysync/cli"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/metrics"
	"github.com/agencysync/agencysync/serve"
)

// --- environment variables ---------------------------------------------------

// varTokenRE finds names that look like agencysync's variables anywhere in a
// file: every variable starts with one of these prefixes.
var varTokenRE = regexp.MustCompile(`\b(?:AGENCY|SYNC|WAREHOUSE|DB|DATABASE|HTTP|LOG)_[A-Z0-9_]*[A-Z0-9]\b`)

// notVariables are names with those prefixes that are not agencysync
// variables, and why.
var notVariables = map[string]string{
	"LOG_DIR": "deploy/demo.sh: the script's own shell variable (not exported)",
}

// recipeFiles lists every file of deploy/ and configs/ except Go tests.
func recipeFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{".", filepath.Join(repo, "configs")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "secrets" {
				return fs.SkipDir // operators' secret files, never committed
			}
			if !d.IsDir() && !strings.HasSuffix(p, "_test.go") {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestEveryNamedVariableExists: every variable named anywhere in deploy/ and
// configs/ is one of config.Variables() (or the _FILE of a secret).
func TestEveryNamedVariableExists(t *testing.T) {
	t.Parallel()
	vars := configVariables()
	seen := 0
	for _, f := range recipeFiles(t) {
		for _, name := range varTokenRE.FindAllString(readFile(t, f), -1) {
			seen++
			if vars.known[name] {
				continue
			}
			if _, ok := notVariables[name]; ok {
				continue
			}
			t.Errorf("%s names %s, which is not a configuration variable (agencysync config lists them)", f, name)
		}
	}
	if seen < 50 {
		t.Fatalf("found only %d variable names in deploy/ and configs/: the scan is broken", seen)
	}
}

// envGiven is one variable a recipe gives an agencysync process.
type envGiven struct {
	Source    string // file and place
	Name      string
	Value     string
	FromRef   bool // valueFrom (a Kubernetes Secret or ConfigMap key), not a value
	Commented bool // a commented example line
}

// recipeEnvironments collects what every recipe sets in agencysync's
// environment, with where each *_FILE variable may point.
func recipeEnvironments(t *testing.T) (envs []envGiven, secretPaths map[string]map[string]bool) {
	t.Helper()
	secretPaths = map[string]map[string]bool{} // source prefix → allowed paths

	// compose: the services running the agencysync image.
	compose := composeFile(t)
	topSecrets := asMap(get(compose, "secrets"))
	for name, svc := range asMap(get(compose, "services")) {
		if !isWorker(svc) {
			continue
		}
		src := "compose.yaml services." + name
		allowed := map[string]bool{}
		for _, s := range strList(get(svc, "secrets")) {
			if topSecrets[s] == nil {
				t.Errorf("%s uses secret %s, which compose.yaml does not define", src, s)
			}
			allowed["/run/secrets/"+s] = true
		}
		secretPaths[src] = allowed
		for k, v := range asMap(get(svc, "environment")) {
			envs = append(envs, envGiven{Source: src, Name: k, Value: str(v)})
		}
		for _, ef := range list(get(svc, "env_file")) {
			p := str(get(ef, "path"))
			if p == "" {
				p = str(ef)
			}
			file := filepath.Clean(p)
			if _, err := os.Stat(file); err != nil {
				file += ".example" // the operator's copy of the example
			}
			for _, a := range parseEnvFile(t, file) {
				envs = append(envs, envGiven{Source: src + " env_file " + file, Name: a.Name, Value: a.Value, Commented: a.Commented})
			}
		}
	}

	// Kubernetes: every container, its env and the ConfigMaps it loads.
	k8s := kubernetesObjects(t)
	for _, o := range k8s.workloads() {
		src := "kubernetes/" + o.file + " " + o.kind
		for _, c := range list(get(o.podSpec(), "containers")) {
			allowed := map[string]bool{}
			for _, vm := range list(get(c, "volumeMounts")) {
				secret := k8s.secretOfVolume(o.podSpec(), str(get(vm, "name")))
				for key := range secret {
					allowed[strings.TrimSuffix(str(get(vm, "mountPath")), "/")+"/"+key] = true
				}
			}
			secretPaths[src] = allowed
			for _, e := range list(get(c, "env")) {
				envs = append(envs, envGiven{Source: src, Name: str(get(e, "name")), Value: str(get(e, "value")), FromRef: get(e, "valueFrom") != nil})
			}
			for _, ef := range list(get(c, "envFrom")) {
				cm := str(get(ef, "configMapRef", "name"))
				data, ok := k8s.configMaps[cm]
				if !ok {
					t.Errorf("%s loads ConfigMap %q, which no manifest defines", src, cm)
				}
				for k, v := range data {
					envs = append(envs, envGiven{Source: src + " ConfigMap " + cm, Name: k, Value: str(v)})
				}
				if get(ef, "secretRef") != nil {
					t.Errorf("%s loads a Secret as environment values; mount it and use *_FILE", src)
				}
			}
		}
	}

	// systemd: Environment= of the service (its EnvironmentFile is the example).
	unit := systemdUnit(t, "systemd/agencysync.service")
	allowed := map[string]bool{}
	for _, lc := range unit["Service"]["LoadCredential"] {
		name, _, _ := strings.Cut(lc, ":")
		allowed["%d/"+name] = true
	}
	secretPaths["systemd/agencysync.service"] = allowed
	for _, e := range unit["Service"]["Environment"] {
		words, err := shellWords(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range words {
			k, v, _ := strings.Cut(w, "=")
			envs = append(envs, envGiven{Source: "systemd/agencysync.service", Name: k, Value: v})
		}
	}

	// The image's own ENV.
	_, stages := parseDockerfile(t)
	for k, v := range envOf(t, stageChain(t, stages, "agencysync")) {
		envs = append(envs, envGiven{Source: "Dockerfile stage agencysync", Name: k, Value: v})
	}

	// configs/: every env file, commented lines included.
	files, _ := filepath.Glob(filepath.Join(repo, "configs", "*.env*"))
	if len(files) < 3 {
		t.Fatalf("configs/ has %d env files, want agencysync.env.example, sandbox.env, streams.env.example", len(files))
	}
	for _, f := range files {
		for _, a := range parseEnvFile(t, f) {
			envs = append(envs, envGiven{Source: f, Name: a.Name, Value: a.Value, Commented: a.Commented})
		}
	}

	// deploy/demo.sh: what it exports.
	for _, m := range regexp.MustCompile(`(?m)^export ([A-Z][A-Z0-9_]*)=(.*)$`).FindAllStringSubmatch(readFile(t, "demo.sh"), -1) {
		envs = append(envs, envGiven{Source: "demo.sh", Name: m[1], Value: m[2]})
	}
	return envs, secretPaths
}

// TestRecipesSetOnlyConfigVariables: what each recipe puts in agencysync's
// environment is a configuration variable.
func TestRecipesSetOnlyConfigVariables(t *testing.T) {
	t.Parallel()
	vars := configVariables()
	envs, _ := recipeEnvironments(t)
	sources := map[string]bool{}
	for _, e := range envs {
		sources[strings.Fields(e.Source)[0]] = true
		// TMPDIR is the system's, not agencysync's: it places the page spool.
		if !vars.known[e.Name] && e.Name != "TMPDIR" {
			t.Errorf("%s sets %s, which is not a configuration variable", e.Source, e.Name)
		}
	}
	for _, want := range []string{"compose.yaml", "kubernetes/cronjob.yaml", "kubernetes/deployment.yaml", "systemd/agencysync.service", "Dockerfile", "demo.sh"} {
		if !sources[want] {
			t.Errorf("no environment found in %s: the collection is broken", want)
		}
	}
}

// TestSecretsOnlyAsFiles: no recipe gives a secret as a value; every *_FILE
// names a file the recipe mounts (a compose secret, a key of a Kubernetes
// Secret volume, a systemd credential) or one that exists in the repository.
// Other services' secrets (PostgreSQL's password) follow the same rule.
func TestSecretsOnlyAsFiles(t *testing.T) {
	t.Parallel()
	vars := configVariables()
	envs, secretPaths := recipeEnvironments(t)
	files := 0
	for _, e := range envs {
		switch {
		case vars.secrets[e.Name] && e.FromRef:
			// a Kubernetes secretKeyRef: through a Secret, allowed
		case vars.secrets[e.Name]:
			if e.Value != "" || !e.Commented {
				t.Errorf("%s gives secret %s as a value; give %s_FILE", e.Source, e.Name, e.Name)
			}
		case strings.HasSuffix(e.Name, "_FILE") && vars.secrets[strings.TrimSuffix(e.Name, "_FILE")]:
			files++
			if e.Commented {
				continue // an example path
			}
			allowed, mounted := secretPaths[strings.SplitN(e.Source, " env_file", 2)[0]]
			switch {
			case mounted && allowed[e.Value]:
			case mounted:
				t.Errorf("%s: %s=%s is not a secret it mounts (%v)", e.Source, e.Name, e.Value, slices.Sorted(maps.Keys(allowed)))
			default:
				if _, err := os.Stat(filepath.Join(repo, e.Value)); err != nil {
					t.Errorf("%s: %s=%s: %v", e.Source, e.Name, e.Value, err)
				}
			}
		}
	}
	if files < 10 {
		t.Errorf("only %d *_FILE variables found in the recipes", files)
	}
	// Any service in compose: a password, key or token only ever as a file.
	for name, svc := range asMap(get(composeFile(t), "services")) {
		for k, v := range asMap(get(svc, "environment")) {
			if regexp.MustCompile(`(PASSWORD|SECRET|TOKEN|_KEY)$`).MatchString(k) && str(v) != "" {
				t.Errorf("compose.yaml services.%s sets %s inline; use %s_FILE and a compose secret", name, k, k)
			}
		}
	}
	// Nowhere in deploy/ or configs/ is a secret assigned outside an env context.
	assignRE := regexp.MustCompile(`\b(DATABASE_URL|AGENCY_API_KEY|AGENCY_COMMS_KEY)\s*[=:]\s*["']?[^\s"'#]`)
	for _, f := range recipeFiles(t) {
		if strings.HasSuffix(f, ".md") {
			continue
		}
		for _, m := range assignRE.FindAllString(readFile(t, f), -1) {
			t.Errorf("%s assigns a secret: %q", f, m)
		}
	}
}

// --- Kubernetes ----------------------------------------------------------------

type k8sObject struct {
	file, kind string
	doc        map[string]any
}

func (o k8sObject) podSpec() any {
	if o.kind == "CronJob" {
		return get(o.doc, "spec", "jobTemplate", "spec", "template", "spec")
	}
	return get(o.doc, "spec", "template", "spec")
}

type k8sSet struct {
	objects    []k8sObject
	configMaps map[string]map[string]any
	secrets    map[string]map[string]bool // Secret name → keys
}

func (s k8sSet) workloads() []k8sObject {
	var out []k8sObject
	for _, o := range s.objects {
		if o.kind == "CronJob" || o.kind == "Deployment" {
			out = append(out, o)
		}
	}
	return out
}

func (s k8sSet) byKind(kind string) k8sObject {
	for _, o := range s.objects {
		if o.kind == kind {
			return o
		}
	}
	return k8sObject{}
}

// secretOfVolume returns the keys of the Secret behind a pod's volume.
func (s k8sSet) secretOfVolume(podSpec any, volume string) map[string]bool {
	for _, v := range list(get(podSpec, "volumes")) {
		if str(get(v, "name")) == volume {
			return s.secrets[str(get(v, "secret", "secretName"))]
		}
	}
	return nil
}

func kubernetesObjects(t *testing.T) k8sSet {
	t.Helper()
	files, _ := filepath.Glob("kubernetes/*.yaml")
	set := k8sSet{configMaps: map[string]map[string]any{}, secrets: map[string]map[string]bool{}}
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			o := k8sObject{file: filepath.Base(f), kind: str(doc["kind"]), doc: doc}
			set.objects = append(set.objects, o)
			name := str(get(doc, "metadata", "name"))
			switch o.kind {
			case "ConfigMap":
				set.configMaps[name], _ = get(doc, "data").(map[string]any)
			case "Secret":
				keys := map[string]bool{}
				for _, field := range []string{"stringData", "data"} {
					m, _ := get(doc, field).(map[string]any)
					for k := range m {
						keys[k] = true
					}
				}
				set.secrets[name] = keys
			}
		}
	}
	return set
}

// TestKubernetesManifests checks what the API server and kubelet need of each
// manifest, and what agencysync needs of them (kubeconform needs its schemas
// from the network, which this machine lacks).
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	k8s := kubernetesObjects(t)
	wantAPI := map[string]string{"Secret": "v1", "ConfigMap": "v1", "CronJob": "batch/v1", "Deployment": "apps/v1"}
	kinds := map[string]int{}
	for _, o := range k8s.objects {
		kinds[o.kind]++
		if api, ok := wantAPI[o.kind]; !ok || str(o.doc["apiVersion"]) != api {
			t.Errorf("%s: %s %s: want one of %v", o.file, o.doc["apiVersion"], o.kind, wantAPI)
		}
		name := str(get(o.doc, "metadata", "name"))
		if !regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`).MatchString(name) {
			t.Errorf("%s: metadata.name %q is not a DNS label", o.file, name)
		}
	}
	for kind := range wantAPI {
		if kinds[kind] != 1 {
			t.Errorf("want one %s, found %d", kind, kinds[kind])
		}
	}
	_, stages := parseDockerfile(t)
	user := lastOf(stageChain(t, stages, "agencysync"), "USER")
	uid, _, _ := strings.Cut(user, ":")

	for _, o := range k8s.workloads() {
		pod := o.podSpec()
		if get(pod, "securityContext", "runAsNonRoot") != true || str(get(pod, "securityContext", "runAsUser")) != uid {
			t.Errorf("%s: the pod must run as non-root user %s (the image's USER)", o.file, uid)
		}
		containers := list(get(pod, "containers"))
		if len(containers) != 1 {
			t.Fatalf("%s: want one container, got %d", o.file, len(containers))
		}
		c := containers[0]
		if !strings.HasPrefix(str(get(c, "image")), "agencysync") {
			t.Errorf("%s: image %q", o.file, get(c, "image"))
		}
		if get(c, "command") != nil {
			t.Errorf("%s: keep the image's ENTRYPOINT (agencysync); give the subcommand in args", o.file)
		}
		if get(c, "securityContext", "allowPrivilegeEscalation") != false || get(c, "securityContext", "readOnlyRootFilesystem") != true {
			t.Errorf("%s: want allowPrivilegeEscalation false and a read-only root filesystem", o.file)
		}
		if k8s.secrets[str(get(pod, "volumes", 0, "secret", "secretName"))] == nil {
			t.Errorf("%s: the secrets volume names no Secret of the manifests", o.file)
		}
		// The root filesystem is read-only: the page spool needs a writable
		// /tmp that outlives a container restart (an emptyDir).
		tmpVolume := ""
		for i := 0; get(c, "volumeMounts", i) != nil; i++ {
			if get(c, "volumeMounts", i, "mountPath") == "/tmp" {
				tmpVolume = str(get(c, "volumeMounts", i, "name"))
			}
		}
		hasEmptyDir := false
		for i := 0; get(pod, "volumes", i) != nil; i++ {
			if tmpVolume != "" && get(pod, "volumes", i, "name") == tmpVolume && get(pod, "volumes", i, "emptyDir") != nil {
				hasEmptyDir = true
			}
		}
		if !hasEmptyDir {
			t.Errorf("%s: want an emptyDir mounted at /tmp (the page spool; the root filesystem is read-only)", o.file)
		}
		args := strList(get(c, "args"))
		switch o.kind {
		case "CronJob":
			spec := get(o.doc, "spec")
			if str(get(spec, "concurrencyPolicy")) != "Forbid" {
				t.Errorf("cronjob: concurrencyPolicy %q, want Forbid", get(spec, "concurrencyPolicy"))
			}
			if _, err := cron.ParseStandard(str(get(spec, "schedule"))); err != nil {
				t.Errorf("cronjob: schedule: %v", err)
			}
			if !slices.Equal(args, []string{"run"}) {
				t.Errorf("cronjob: args %v, want [run]", args)
			}
			if str(get(pod, "restartPolicy")) != "Never" {
				t.Errorf("cronjob: restartPolicy must be Never (the pod failure policy needs it)")
			}
			var codes []int
			disruptionFirst := false
			for i, r := range list(get(spec, "jobTemplate", "spec", "podFailurePolicy", "rules")) {
				if i == 0 && str(get(r, "action")) == "Ignore" && str(get(r, "onPodConditions", 0, "type")) == "DisruptionTarget" {
					disruptionFirst = true
				}
				if str(get(r, "action")) == "FailJob" {
					if str(get(r, "onExitCodes", "containerName")) != str(get(c, "name")) || str(get(r, "onExitCodes", "operator")) != "In" {
						t.Errorf("cronjob: FailJob rule must name container %s with operator In", get(c, "name"))
					}
					for _, v := range list(get(r, "onExitCodes", "values")) {
						n, _ := v.(int)
						codes = append(codes, n)
					}
				}
			}
			if !disruptionFirst {
				t.Error("cronjob: the first pod failure rule must ignore DisruptionTarget (an evicted pod exits 75 and deserves another try)")
			}
			slices.Sort(codes)
			if want := []int{cli.ExitUsage, cli.ExitCredential}; !slices.Equal(codes, want) {
				t.Errorf("cronjob: the Job should end without retrying on exit codes %v (usage, credentials), got %v", want, codes)
			}
			// An incomplete night (budget or quota spent) resumes on the next
			// schedule: the pod exits 0 so the Job is not a failed one.
			if v, ok := containerEnv(c)["SYNC_EXIT_INCOMPLETE"]; !ok || v != "0" {
				t.Errorf("cronjob: SYNC_EXIT_INCOMPLETE is %q (set %v), want \"0\": a night that will resume must not be a failed Job", v, ok)
			}
		case "Deployment":
			if !slices.Equal(args, []string{"serve"}) {
				t.Errorf("deployment: args %v, want [serve]", args)
			}
			sel, _ := get(o.doc, "spec", "selector", "matchLabels").(map[string]any)
			labels, _ := get(o.doc, "spec", "template", "metadata", "labels").(map[string]any)
			for k, v := range sel {
				if labels[k] != v {
					t.Errorf("deployment: selector %s=%v does not match the template's labels", k, v)
				}
			}
			if len(sel) == 0 {
				t.Error("deployment: empty selector")
			}
			port := deploymentHTTPPort(t, k8s, c)
			ann, _ := get(o.doc, "spec", "template", "metadata", "annotations").(map[string]any)
			if str(ann["prometheus.io/scrape"]) != "true" || str(ann["prometheus.io/path"]) != "/metrics" || str(ann["prometheus.io/port"]) != port {
				t.Errorf("deployment: prometheus.io annotations %v, want scrape true, path /metrics, port %s", ann, port)
			}
			for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
				if got := str(get(c, probe, "httpGet", "path")); got != path {
					t.Errorf("deployment: %s path %q, want %s", probe, got, path)
				}
				if p := probePort(c, get(c, probe, "httpGet", "port")); p != port {
					t.Errorf("deployment: %s port %s, want HTTP_ADDR's %s", probe, p, port)
				}
			}
		}
	}
}

// deploymentHTTPPort is the port of HTTP_ADDR in the container's environment.
func deploymentHTTPPort(t *testing.T, k8s k8sSet, c any) string {
	t.Helper()
	addr := ""
	for _, ef := range list(get(c, "envFrom")) {
		if v, ok := k8s.configMaps[str(get(ef, "configMapRef", "name"))]["HTTP_ADDR"]; ok {
			addr = str(v)
		}
	}
	for _, e := range list(get(c, "env")) {
		if str(get(e, "name")) == "HTTP_ADDR" {
			addr = str(get(e, "value"))
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || (host != "" && host != "0.0.0.0") {
		t.Fatalf("HTTP_ADDR %q must listen on every interface of the pod (e.g. :9464)", addr)
	}
	return port
}

// probePort resolves a probe's port (a number or a named container port).
func probePort(c any, port any) string {
	if n, ok := port.(int); ok {
		return strconv.Itoa(n)
	}
	for _, p := range list(get(c, "ports")) {
		if str(get(p, "name")) == str(port) {
			return str(get(p, "containerPort"))
		}
	}
	return ""
}

// --- compose -------------------------------------------------------------------

func composeFile(t *testing.T) map[string]any {
	t.Helper()
	docs := yamlDocs(t, "compose.yaml")
	if len(docs) != 1 {
		t.Fatalf("compose.yaml: %d documents", len(docs))
	}
	return docs[0]
}

func isWorker(svc any) bool {
	return str(get(svc, "build", "target")) == "agencysync"
}

// TestCompose checks the services, profiles, healthchecks and secrets of
// compose.yaml (YAML merge keys resolved, as compose resolves them).
func TestCompose(t *testing.T) {
	t.Parallel()
	c := composeFile(t)
	services, _ := get(c, "services").(map[string]any)
	want := map[string][]string{"postgres": nil, "agencysync": nil, "sandbox": {"sandbox"}, "agencysync-sandbox": {"sandbox"}}
	for name, profiles := range want {
		svc, ok := services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		if got := strList(get(svc, "profiles")); !slices.Equal(got, profiles) {
			t.Errorf("services.%s profiles %v, want %v", name, got, profiles)
		}
		if get(svc, "healthcheck", "test") == nil {
			t.Errorf("services.%s has no healthcheck", name)
		}
	}
	if len(services) != len(want) {
		t.Errorf("services %v, want %v", slices.Sorted(maps.Keys(services)), slices.Sorted(maps.Keys(want)))
	}
	// An incomplete run (exit 75 of `run`) resumes: the workers run serve,
	// which schedules the next run itself and never exits on one, and they
	// are restarted unless stopped.
	for _, name := range []string{"agencysync", "agencysync-sandbox"} {
		svc := services[name]
		if got := strList(get(svc, "command")); !slices.Equal(got, []string{"serve"}) || str(get(svc, "restart")) != "unless-stopped" {
			t.Errorf("services.%s: command %v restart %q, want [serve] and unless-stopped (an incomplete run resumes on the next schedule)", name, got, get(svc, "restart"))
		}
	}
	_, stages := parseDockerfile(t)
	for name, svc := range services {
		if target := str(get(svc, "build", "target")); target != "" {
			stage(t, stages, target)
			if str(get(svc, "build", "dockerfile")) != "deploy/Dockerfile" || str(get(svc, "build", "context")) != ".." {
				t.Errorf("services.%s builds %v; want context .. and dockerfile deploy/Dockerfile", name, get(svc, "build"))
			}
		}
		for dep, cond := range asMap(get(svc, "depends_on")) {
			if services[dep] == nil {
				t.Errorf("services.%s depends on unknown %s", name, dep)
			}
			if str(get(cond, "condition")) != "service_healthy" {
				t.Errorf("services.%s should wait for %s to be healthy", name, dep)
			}
		}
	}
	for _, name := range []string{"agencysync", "agencysync-sandbox"} {
		svc := services[name]
		if !isWorker(svc) {
			t.Fatalf("services.%s does not build the agencysync image", name)
		}
		if cmd := strList(get(svc, "command")); !slices.Equal(cmd, []string{"serve"}) {
			t.Errorf("services.%s command %v, want [serve]", name, cmd)
		}
		env := asMap(get(svc, "environment"))
		_, port, err := net.SplitHostPort(str(env["HTTP_ADDR"]))
		if err != nil {
			t.Errorf("services.%s HTTP_ADDR %q", name, env["HTTP_ADDR"])
		}
		test := strList(get(svc, "healthcheck", "test"))
		u, err := url.Parse(test[len(test)-1])
		if err != nil || u.Port() != port || u.Path != "/readyz" {
			t.Errorf("services.%s healthcheck %v: want /readyz on HTTP_ADDR's port %s", name, test, port)
		}
		if _, ok := asMap(get(svc, "depends_on"))["postgres"]; !ok {
			t.Errorf("services.%s must wait for postgres", name)
		}
		if get(svc, "read_only") != true {
			t.Errorf("services.%s: want a read-only root filesystem", name)
		}
	}
	sbWorker := asMap(get(services["agencysync-sandbox"], "environment"))
	if str(sbWorker["WAREHOUSE_SCHEMA"]) == "" || str(sbWorker["WAREHOUSE_SCHEMA"]) == "agency" {
		t.Errorf("the sandbox worker must use a schema of its own, not %q", sbWorker["WAREHOUSE_SCHEMA"])
	}
	for _, k := range []string{"AGENCY_BASE_URL", "AGENCY_COMMS_URL"} {
		if u, err := url.Parse(str(sbWorker[k])); err != nil || u.Hostname() != "sandbox" {
			t.Errorf("the sandbox worker's %s=%v must point at the sandbox service", k, sbWorker[k])
		}
	}
	if pg := asMap(get(services["postgres"], "environment")); str(pg["POSTGRES_PASSWORD_FILE"]) == "" {
		t.Error("postgres: the password must come from POSTGRES_PASSWORD_FILE")
	}
	for name, s := range asMap(get(c, "secrets")) {
		file := str(get(s, "file"))
		if file == "" {
			t.Errorf("secrets.%s: want a file", name)
		}
		if strings.HasPrefix(file, "../configs/") {
			if _, err := os.Stat(file); err != nil {
				t.Errorf("secrets.%s: %v", name, err)
			}
		} else if !strings.HasPrefix(file, "./secrets/") {
			t.Errorf("secrets.%s: operators' secrets belong in deploy/secrets/ (ignored by git), not %s", name, file)
		}
	}
	ignore := readFile(t, ".gitignore")
	if !strings.Contains(ignore, "/secrets/") {
		t.Error("deploy/.gitignore must ignore /secrets/")
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// --- probes and metrics are served ---------------------------------------------

// TestProbePathsAreServed starts serve.Run (as `agencysync serve` does) and
// fetches every path the recipes probe or scrape.
func TestProbePathsAreServed(t *testing.T) {
	t.Parallel()
	paths := map[string]string{}
	k8s := kubernetesObjects(t)
	dep := k8s.byKind("Deployment")
	c := get(dep.podSpec(), "containers", 0)
	for _, probe := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
		if p := str(get(c, probe, "httpGet", "path")); p != "" {
			paths[p] = "deployment " + probe
		}
	}
	paths[str(get(dep.doc, "spec", "template", "metadata", "annotations", "prometheus.io/path"))] = "prometheus.io/path"
	for name, svc := range asMap(get(composeFile(t), "services")) {
		if isWorker(svc) {
			test := strList(get(svc, "healthcheck", "test"))
			u, _ := url.Parse(test[len(test)-1])
			paths[u.Path] = "compose " + name + " healthcheck"
		}
	}
	if len(paths) < 3 {
		t.Fatalf("found only %v", paths)
	}

	reg := prometheus.NewRegistry()
	metrics.New(reg)
	core, logs := observer.New(zapcore.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serve.Run(ctx, idleRunner{}, serve.Options{Schedules: []serve.Schedule{{Spec: "0 2 * * *", Streams: engine.AllStreams}},
			HTTPAddr: "127.0.0.1:0", Gatherer: reg, Ready: func(context.Context) error { return nil }, Logger: zap.New(core)})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, e := range logs.FilterMessage("serving health and metrics").All() {
			addr = e.ContextMap()["addr"].(string)
		}
	}
	if addr == "" {
		t.Fatal("serve did not log its address")
	}
	for p, who := range paths {
		resp, err := http.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s probes %s: HTTP %d %s", who, p, resp.StatusCode, body)
		}
		if p == "/metrics" && !bytes.Contains(body, []byte("agencysync_quota_left_requests")) {
			t.Errorf("/metrics lacks agencysync's series:\n%s", body)
		}
	}
}

type idleRunner struct{}

func (idleRunner) Run(context.Context, engine.Request) (*engine.Result, error) {
	return nil, errors.New("not expected to run")
}

// --- Grafana ---------------------------------------------------------------------

// metricInfo is a series agencysync exposes: its type and labels.
type metricInfo struct {
	kind   string // counter, gauge, histogram
	labels []string
}

// captureRegisterer records what metrics.New registers.
type captureRegisterer struct{ metrics map[string]metricInfo }

func (c *captureRegisterer) Register(col prometheus.Collector) error {
	kind := ""
	switch col.(type) {
	case *prometheus.GaugeVec, prometheus.Gauge: // before Counter: a Gauge has Inc and Add too
		kind = "gauge"
	case *prometheus.CounterVec, prometheus.Counter:
		kind = "counter"
	case *prometheus.HistogramVec, prometheus.Histogram:
		kind = "histogram"
	default:
		return fmt.Errorf("unexpected collector %T", col)
	}
	ch := make(chan *prometheus.Desc, 10)
	go func() { col.Describe(ch); close(ch) }()
	re := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	for d := range ch {
		m := re.FindStringSubmatch(d.String())
		if m == nil {
			return fmt.Errorf("cannot read %s", d)
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		c.metrics[m[1]] = metricInfo{kind: kind, labels: labels}
	}
	return nil
}

func (c *captureRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, col := range cs {
		if err := c.Register(col); err != nil {
			panic(err)
		}
	}
}

func (c *captureRegisterer) Unregister(prometheus.Collector) bool { return false }

func engineMetrics(t *testing.T) map[string]metricInfo {
	t.Helper()
	c := &captureRegisterer{metrics: map[string]metricInfo{}}
	metrics.New(c)
	if len(c.metrics) < 5 {
		t.Fatalf("metrics.New registered only %v", c.metrics)
	}
	return c.metrics
}

type dashboardTarget struct {
	Expr         string `json:"expr"`
	RefID        string `json:"refId"`
	LegendFormat string `json:"legendFormat"`
}

type dashboardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []dashboardTarget         `json:"targets"`
}

type dashboard struct {
	UID           string           `json:"uid"`
	Title         string           `json:"title"`
	SchemaVersion int              `json:"schemaVersion"`
	Panels        []dashboardPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(readFile(t, "grafana/agencysync.json")))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("grafana/agencysync.json: %v", err)
	}
	return d
}

var (
	metricNameRE = regexp.MustCompile(`\bagencysync_[a-z_]+[a-z]\b`)
	selectorRE   = regexp.MustCompile(`(agencysync_[a-z_]+[a-z])\{([^}]*)\}`)
	matcherRE    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"`)
	groupingRE   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	legendRE     = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
)

// targetLabels are added by Prometheus when it scrapes.
var targetLabels = []string{"job", "instance"}

// TestGrafanaDashboard: every series the dashboard queries is one
// metrics.New registers, with the labels it has; every series is shown.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	metrics := engineMetrics(t)
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 30 {
		t.Errorf("dashboard uid %q, title %q, schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("want a datasource variable, got %v", vars)
	}
	used := map[string]bool{}
	ids := map[int]bool{}
	exprs := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: bad gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: want targets on the ${datasource} variable", p.Title)
		}
		for _, tg := range p.Targets {
			exprs++
			checkExpr(t, p.Title, tg, metrics, used, vars)
		}
	}
	if exprs < 10 {
		t.Errorf("only %d queries", exprs)
	}
	for name := range metrics {
		if !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		checkWithPromtool(t, promtool, d)
	} else {
		t.Log("promtool not installed: PromQL syntax checked by the patterns above only")
	}
}

func checkExpr(t *testing.T, panel string, tg dashboardTarget, metrics map[string]metricInfo, used map[string]bool, vars map[string]string) {
	t.Helper()
	if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") || strings.Count(tg.Expr, "{") != strings.Count(tg.Expr, "}") {
		t.Errorf("panel %q: unbalanced %s", panel, tg.Expr)
	}
	for _, m := range regexp.MustCompile(`\$([a-z_]+)`).FindAllStringSubmatch(tg.Expr, -1) {
		if _, ok := vars[m[1]]; !ok && !strings.HasPrefix(m[1], "__") {
			t.Errorf("panel %q: $%s is not a dashboard variable", panel, m[1])
		}
	}
	inExpr := map[string]bool{}
	for _, name := range metricNameRE.FindAllString(tg.Expr, -1) {
		base, suffix := name, ""
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, s); ok && metrics[b].kind == "histogram" {
				base, suffix = b, s
			}
		}
		info, ok := metrics[base]
		if !ok {
			t.Errorf("panel %q: %s is not a metric of metrics.New", panel, name)
			continue
		}
		if info.kind == "histogram" && suffix == "" {
			t.Errorf("panel %q: query histogram %s through _bucket, _sum or _count", panel, base)
		}
		if info.kind == "counter" && !regexp.MustCompile(`(rate|increase)\(`+name).MatchString(tg.Expr) {
			t.Errorf("panel %q: counter %s without rate() or increase()", panel, name)
		}
		used[base] = true
		inExpr[base] = true
	}
	if len(inExpr) == 0 {
		t.Errorf("panel %q: %s queries no agencysync metric", panel, tg.Expr)
	}
	allowed := func(label string, only string) bool {
		if slices.Contains(targetLabels, label) {
			return true
		}
		for name := range inExpr {
			if only != "" && name != only {
				continue
			}
			if slices.Contains(metrics[name].labels, label) || (label == "le" && metrics[name].kind == "histogram") {
				return true
			}
		}
		return false
	}
	for _, m := range selectorRE.FindAllStringSubmatch(tg.Expr, -1) {
		base := m[1]
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(base, s); ok && metrics[b].kind == "histogram" {
				base = b
			}
		}
		for _, lm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if !allowed(lm[1], base) {
				t.Errorf("panel %q: %s has no label %q", panel, m[1], lm[1])
			}
		}
	}
	var grouped []string
	for _, g := range groupingRE.FindAllStringSubmatch(tg.Expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				grouped = append(grouped, l)
				if !allowed(l, "") {
					t.Errorf("panel %q: groups by %q, a label none of its metrics has", panel, l)
				}
			}
		}
	}
	for _, m := range legendRE.FindAllStringSubmatch(tg.LegendFormat, -1) {
		if len(groupingRE.FindAllString(tg.Expr, -1)) > 0 && !slices.Contains(grouped, m[1]) {
			t.Errorf("panel %q: legend {{%s}} is not kept by the aggregation", panel, m[1])
		}
	}
}

// checkWithPromtool parses every query with Prometheus's own parser (promtool
// check rules on a rule file made of the dashboard's expressions).
func checkWithPromtool(t *testing.T, promtool string, d dashboard) {
	t.Helper()
	var b strings.Builder
	b.WriteString("groups:\n- name: dashboard\n  rules:\n")
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			n++
			expr := strings.NewReplacer(`"$job"`, `".*"`, "$__range", "1d", "$__rate_interval", "5m").Replace(tg.Expr)
			q, _ := json.Marshal(expr)
			fmt.Fprintf(&b, "  - record: agencysync:dashboard_%d\n    expr: %s\n", n, q)
		}
	}
	f := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("SUCCESS: %d rules found", n)) {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}

// --- systemd -------------------------------------------------------------------

// systemdUnit parses a unit file into section → key → values (in order).
func systemdUnit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	section := ""
	for i, line := range strings.Split(readFile(t, path), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: %q", path, i+1, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

func one(t *testing.T, unit map[string]map[string][]string, section, key string) string {
	t.Helper()
	v := unit[section][key]
	if len(v) != 1 {
		t.Errorf("[%s] %s: %d values, want one", section, key, len(v))
		return ""
	}
	return v[0]
}

// TestSystemdUnits checks what agencysync needs of the service and timer.
func TestSystemdUnits(t *testing.T) {
	t.Parallel()
	svc := systemdUnit(t, "systemd/agencysync.service")
	if one(t, svc, "Service", "Type") != "oneshot" {
		t.Error("the service runs one sync: Type=oneshot")
	}
	if got := one(t, svc, "Service", "ExecStart"); got != "/usr/local/bin/agencysync run" {
		t.Errorf("ExecStart=%s", got)
	}
	if !slices.Contains(strings.Fields(one(t, svc, "Service", "SuccessExitStatus")), strconv.Itoa(cli.ExitIncomplete)) {
		t.Errorf("SuccessExitStatus must include %d (incomplete, resumes next run)", cli.ExitIncomplete)
	}
	if one(t, svc, "Service", "EnvironmentFile") != "/etc/agencysync/agencysync.env" {
		t.Error("EnvironmentFile=/etc/agencysync/agencysync.env (the installed configs/agencysync.env.example)")
	}
	if one(t, svc, "Service", "DynamicUser") != "yes" && one(t, svc, "Service", "User") == "" {
		t.Error("the service must not run as root")
	}
	stopSec := strings.ReplaceAll(one(t, svc, "Service", "TimeoutStopSec"), " ", "")
	if _, err := strconv.Atoi(stopSec); err == nil {
		stopSec += "s" // systemd's unit is the second
	}
	stop, err := time.ParseDuration(stopSec)
	if err != nil || stop <= 10*time.Second {
		t.Errorf("TimeoutStopSec must exceed the 10 s agencysync takes to stop (%v)", err)
	}
	tm := systemdUnit(t, "systemd/agencysync.timer")
	if one(t, tm, "Timer", "Unit") != "agencysync.service" || one(t, tm, "Install", "WantedBy") != "timers.target" {
		t.Error("the timer must start agencysync.service and be wanted by timers.target")
	}
	if one(t, tm, "Timer", "OnCalendar") == "" || one(t, tm, "Timer", "Persistent") != "yes" {
		t.Error("the timer needs OnCalendar= and Persistent=yes")
	}
}

// --- the image and what depends on it --------------------------------------------

// TestDockerfile checks the stages: static build, non-root runtime, serve by
// default, HTTP_ADDR on every interface and exposed.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	args, stages := parseDockerfile(t)
	if len(stages) < 3 {
		t.Fatalf("want a multi-stage build, got %d stages", len(stages))
	}
	if !strings.HasPrefix(stages[0].From, "golang:") || args["GO_VERSION"] == "" {
		t.Errorf("the build stage must start FROM golang:${GO_VERSION}, got %s", stages[0].From)
	}
	gomod := readFile(t, filepath.Join(repo, "go.mod"))
	if m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(gomod); m == nil || m[1] != args["GO_VERSION"] {
		t.Errorf("GO_VERSION=%s, go.mod says %v", args["GO_VERSION"], m)
	}
	build := stage(t, stages, "build")
	if envOf(t, []*dockerStage{build})["CGO_ENABLED"] != "0" {
		t.Error("the build stage must set CGO_ENABLED=0 (a static binary)")
	}
	if last := stages[len(stages)-1]; last.Name != "agencysync" {
		t.Errorf("the default (last) stage is %q, want agencysync", last.Name)
	}
	for name, wantCmd := range map[string]string{"agencysync": "serve", "agencysandbox": "--api-addr"} {
		chain := stageChain(t, stages, name)
		user := lastOf(chain, "USER")
		uid, _, _ := strings.Cut(user, ":")
		if n, err := strconv.Atoi(uid); err != nil || n == 0 {
			t.Errorf("stage %s runs as USER %q; want a numeric non-root uid (Kubernetes runAsNonRoot checks it)", name, user)
		}
		ep := jsonArray(t, lastOf(chain, "ENTRYPOINT"))
		if len(ep) != 1 || ep[0] != "/usr/local/bin/"+name {
			t.Errorf("stage %s ENTRYPOINT %v", name, ep)
		}
		if cmd := jsonArray(t, lastOf(chain, "CMD")); len(cmd) == 0 || cmd[0] != wantCmd {
			t.Errorf("stage %s CMD %v, want it to start with %s", name, cmd, wantCmd)
		}
		copied := false
		for _, in := range chain[0].Instructions {
			if in.Cmd == "COPY" && strings.Contains(in.Args, "--from=build /out/"+name+" /usr/local/bin/"+name) {
				copied = true
			}
		}
		if !copied {
			t.Errorf("stage %s does not copy /out/%s from the build stage", name, name)
		}
	}
	env := envOf(t, stageChain(t, stages, "agencysync"))
	_, port, err := net.SplitHostPort(env["HTTP_ADDR"])
	if err != nil {
		t.Fatalf("the image's HTTP_ADDR %q", env["HTTP_ADDR"])
	}
	if expose := lastOf(stageChain(t, stages, "agencysync"), "EXPOSE"); expose != port {
		t.Errorf("EXPOSE %s, HTTP_ADDR port %s", expose, port)
	}
	ignore := readFile(t, "Dockerfile.dockerignore")
	for _, p := range []string{".git", ".data", "bin"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(p) + `$`).MatchString(ignore) {
			t.Errorf("Dockerfile.dockerignore does not leave out %s", p)
		}
	}
}

// TestBuiltLikeTheImage builds both binaries with the Dockerfile's own go build
// commands (Docker itself cannot run here) and checks what the recipes rely
// on: static binaries, the version stamp, the sandbox started with the
// image's and compose's arguments, a sync through the compose sandbox
// profile's environment, and systemd-analyze verify of the units.
func TestBuiltLikeTheImage(t *testing.T) {
	t.Parallel()
	bin := binaries(t)

	t.Run("static", func(t *testing.T) {
		for _, name := range []string{"agencysync", "agencysandbox"} {
			f, err := elf.Open(filepath.Join(bin, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("%s is dynamically linked", name)
				}
			}
			f.Close()
		}
		out, err := exec.Command(filepath.Join(bin, "agencysync"), "version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "agencysync "+testVersion {
			t.Errorf("agencysync version: %q %v (the -X ldflag must set cli.Version)", out, err)
		}
		// The time zone database is embedded (AGENCY_QUOTA_TZ works in an
		// image without zoneinfo).
		info, err := exec.Command("go", "version", "-m", filepath.Join(bin, "agencysync")).Output()
		if err != nil || !regexp.MustCompile(`(?m)^\s+build\s+-tags=timetzdata$`).Match(info) {
			t.Errorf("agencysync is not built with -tags timetzdata: %v\n%s", err, info)
		}
	})

	t.Run("sandbox CMD of the image", func(t *testing.T) {
		_, stages := parseDockerfile(t)
		args := jsonArray(t, lastOf(stageChain(t, stages, "agencysandbox"), "CMD"))
		startSandboxProcess(t, filepath.Join(bin, "agencysandbox"), append(args, "--api-addr", "127.0.0.1:0", "--comms-addr", "127.0.0.1:0")...)
	})

	t.Run("compose sandbox profile", func(t *testing.T) {
		services := asMap(get(composeFile(t), "services"))
		args := strList(get(services["sandbox"], "command"))
		// Free ports, no limits and fewer e-mails to keep the test short;
		// everything else as compose runs it.
		apiURL, commsURL := startSandboxProcess(t, filepath.Join(bin, "agencysandbox"), append(args,
			"--api-addr", "127.0.0.1:0", "--comms-addr", "127.0.0.1:0", "--log-level", "info",
			"--no-limits", "--emails", "1500", "--brands", "3", "--projects-per-brand", "2")...)
		secretFiles := map[string]string{}
		for name, s := range asMap(get(composeFile(t), "secrets")) {
			secretFiles["/run/secrets/"+name] = str(get(s, "file"))
		}
		vars := map[string]string{}
		for k, v := range asMap(get(services["agencysync-sandbox"], "environment")) {
			vars[k] = str(v)
		}
		for _, k := range []string{"AGENCY_BASE_URL", "AGENCY_COMMS_URL"} {
			u, _ := url.Parse(vars[k])
			vars[k] = map[string]string{"8081": apiURL, "8082": commsURL}[u.Port()]
		}
		delete(vars, "DATABASE_URL_FILE")
		vars["DATABASE_URL"] = warehousetest.DSN(t)
		vars["WAREHOUSE_SCHEMA"] = warehousetest.NewSchemaName(t)
		vars["AGENCY_RATE_LIMIT"] = "200"
		env := cli.Env{Stdout: io.Discard, Stderr: &bytes.Buffer{},
			Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
			ReadFile: func(p string) ([]byte, error) {
				f, ok := secretFiles[p]
				if !ok {
					return nil, fmt.Errorf("%s is not a compose secret", p)
				}
				return os.ReadFile(f)
			}}
		if code := cli.Main(contextWithTimeout(t, 2*time.Minute), []string{"run"}, env); code != cli.ExitOK {
			t.Fatalf("agencysync run with the compose sandbox worker's environment: exit %d\n%s", code, env.Stderr)
		}
	})

	t.Run("systemd-analyze verify", func(t *testing.T) {
		sa, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("systemd-analyze is not installed")
		}
		dir := t.TempDir()
		for _, name := range []string{"agencysync.service", "agencysync.timer"} {
			unit := strings.ReplaceAll(readFile(t, filepath.Join("systemd", name)), "/usr/local/bin/agencysync", filepath.Join(bin, "agencysync"))
			if err := os.WriteFile(filepath.Join(dir, name), []byte(unit), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(sa, "verify", filepath.Join(dir, "agencysync.service"), filepath.Join(dir, "agencysync.timer"))
		out, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify (any warning fails): %v\n%s", err, out)
		}
	})
}

// --- dbt -------------------------------------------------------------------------

// TestDbtSources: sources.yml declares every table and view of a freshly
// migrated warehouse, each table with a freshness check on _synced_at, and
// only columns that exist; its descriptions are the tables' COMMENTs.
func TestDbtSources(t *testing.T) {
	t.Parallel()
	pool, schema := warehousetest.Schema(t)
	ctx := context.Background()
	type relation struct {
		kind, comment string
		columns       map[string]bool
	}
	rels := map[string]*relation{}
	rows, err := pool.Query(ctx, `SELECT c.relname, c.relkind::text, coalesce(obj_description(c.oid, 'pg_class'), ''), a.attname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = $1 AND c.relkind IN ('r', 'v') AND c.relname NOT LIKE 'goose%'`, schema)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, kind, comment, col string
		if err := rows.Scan(&name, &kind, &comment, &col); err != nil {
			t.Fatal(err)
		}
		if rels[name] == nil {
			rels[name] = &relation{kind: kind, comment: comment, columns: map[string]bool{}}
		}
		rels[name].columns[col] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	docs := yamlDocs(t, "dbt/sources.yml")
	if len(docs) != 1 || get(docs[0], "version") != 2 {
		t.Fatalf("dbt/sources.yml: want one document with version: 2")
	}
	sources := list(get(docs[0], "sources"))
	if len(sources) != 1 {
		t.Fatalf("want one source, got %d", len(sources))
	}
	src := sources[0]
	if !strings.Contains(str(get(src, "schema")), "'agency'") {
		t.Errorf("the schema should default to agency: %v", get(src, "schema"))
	}
	loadedAt := str(get(src, "config", "loaded_at_field"))
	if loadedAt != "_synced_at" {
		t.Errorf("config.loaded_at_field %q, want _synced_at", loadedAt)
	}
	defaultFresh := get(src, "config", "freshness")
	checkFreshness(t, "source", defaultFresh)
	declared := map[string]bool{}
	for _, tb := range list(get(src, "tables")) {
		name := str(get(tb, "name"))
		declared[name] = true
		rel := rels[name]
		if rel == nil {
			t.Errorf("dbt declares %s, which the warehouse does not have", name)
			continue
		}
		if got := str(get(tb, "description")); got != rel.comment {
			t.Errorf("%s: description %q, the table's COMMENT is %q", name, got, rel.comment)
		}
		cfg := asMap(get(tb, "config"))
		fresh, overridden := cfg["freshness"]
		if !overridden {
			fresh = defaultFresh
		}
		switch {
		case rel.kind == "v" || name == "rejected_records" || name == "delete_candidates" || name == "paging_state":
			if !overridden || fresh != nil {
				t.Errorf("%s: freshness must be null (a view, or a table whose quiet is good news)", name)
			}
		default:
			checkFreshness(t, name, fresh)
			if !rel.columns[loadedAt] {
				t.Errorf("%s has no %s column", name, loadedAt)
			}
		}
		for _, c := range list(get(tb, "columns")) {
			col := str(get(c, "name"))
			if !rel.columns[col] {
				t.Errorf("%s.%s: no such column", name, col)
			}
			for _, test := range strList(get(c, "data_tests")) {
				if test != "unique" && test != "not_null" {
					t.Errorf("%s.%s: unexpected test %s", name, col, test)
				}
			}
		}
	}
	for name := range rels {
		if !declared[name] {
			t.Errorf("dbt/sources.yml does not declare %s", name)
		}
	}
}

func checkFreshness(t *testing.T, where string, f any) {
	t.Helper()
	seconds := map[string]int{"minute": 60, "hour": 3600, "day": 86400}
	age := func(k string) int {
		v := get(f, k)
		if v == nil {
			return 0
		}
		n, _ := get(v, "count").(int)
		p := seconds[str(get(v, "period"))]
		if n <= 0 || p == 0 {
			t.Errorf("%s: freshness %s %v: want a positive count and a period of minute, hour or day", where, k, v)
		}
		return n * p
	}
	warn, errAfter := age("warn_after"), age("error_after")
	if warn == 0 {
		t.Errorf("%s: freshness without warn_after", where)
	}
	if errAfter != 0 && errAfter <= warn {
		t.Errorf("%s: error_after must exceed warn_after", where)
	}
}

// containerEnv is a container's env list as name → value (valueFrom
// entries are left out).
func containerEnv(c any) map[string]string {
	out := map[string]string{}
	for _, e := range list(get(c, "env")) {
		if v, ok := get(e, "value").(string); ok {
			out[str(get(e, "name"))] = v
		}
	}
	return out
}
