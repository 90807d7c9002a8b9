package deploy

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/cli"
	"github.com/agencysync/agencysync/config"
)

// fleetObjects reads deploy/kubernetes/fleet/*.yaml by kind.
func fleetObjects(t *testing.T) map[string][]map[string]any {
	t.Helper()
	files, _ := filepath.Glob("kubernetes/fleet/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifest in kubernetes/fleet")
	}
	out := map[string][]map[string]any{}
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			kind := str(doc["kind"])
			out[kind] = append(out[kind], doc)
		}
	}
	return out
}

func named(docs []map[string]any, name string) map[string]any {
	for _, d := range docs {
		if str(get(d, "metadata", "name")) == name {
			return d
		}
	}
	return nil
}

// TestKubernetesFleet: the fleet Deployment runs `agencysync fleet serve`
// in two replicas or more, as the image's user, probed and scraped on
// HTTP_ADDR; its worker id is the pod's name; FLEET_FILE is the mounted
// ConfigMap's file, which parses as a fleet file; every agency's key is a
// file of a mounted Secret (never a value); every agency's configuration
// loads and has what a sync needs.
func TestKubernetesFleet(t *testing.T) {
	t.Parallel()
	objs := fleetObjects(t)
	deps := objs["Deployment"]
	if len(deps) != 1 {
		t.Fatalf("want one fleet Deployment, found %d", len(deps))
	}
	d := deps[0]
	if n, _ := get(d, "spec", "replicas").(int); n < 2 {
		t.Errorf("replicas %v: a fleet wants two workers or more (one takes over the other's syncs)", get(d, "spec", "replicas"))
	}
	pod := get(d, "spec", "template", "spec")
	c := get(pod, "containers", 0)
	if args := strList(get(c, "args")); !slices.Equal(args, []string{"fleet", "serve"}) {
		t.Errorf("args %v, want [fleet serve]", args)
	}
	_, stages := parseDockerfile(t)
	uid, _, _ := strings.Cut(lastOf(stageChain(t, stages, "agencysync"), "USER"), ":")
	if get(pod, "securityContext", "runAsNonRoot") != true || str(get(pod, "securityContext", "runAsUser")) != uid ||
		get(c, "securityContext", "readOnlyRootFilesystem") != true {
		t.Errorf("the pod must run as the image's user %s, non-root, on a read-only root filesystem", uid)
	}
	if g, _ := get(pod, "terminationGracePeriodSeconds").(int); g < 30 {
		t.Errorf("terminationGracePeriodSeconds %v: syncs need time to commit their page and hand their jobs back", g)
	}
	env := fleetEnv(t, objs, c)
	if env["FLEET_WORKER_ID"] != "fieldRef:metadata.name" {
		t.Errorf("FLEET_WORKER_ID %q: want the pod's name (fieldRef metadata.name)", env["FLEET_WORKER_ID"])
	}
	checkFleetProbes(t, d, c, env["HTTP_ADDR"])
	mounts := fleetMounts(t, objs, pod, c)
	checkFleetEnv(t, env, mounts)
	checkFleetFile(t, env, mounts)
	sel, _ := get(d, "spec", "selector", "matchLabels").(map[string]any)
	pdb := objs["PodDisruptionBudget"]
	if len(pdb) != 1 || str(get(pdb[0], "spec", "minAvailable")) != "1" || !sameLabels(get(pdb[0], "spec", "selector", "matchLabels"), sel) {
		t.Errorf("want a PodDisruptionBudget keeping one worker of the Deployment's selector")
	}
}

func sameLabels(a any, b map[string]any) bool {
	m, _ := a.(map[string]any)
	if len(m) != len(b) {
		return false
	}
	for k, v := range m {
		if b[k] != v {
			return false
		}
	}
	return true
}

// fleetEnv is the container's environment: its ConfigMap's, then its own
// (a valueFrom reads "fieldRef:PATH" or "ref").
func fleetEnv(t *testing.T, objs map[string][]map[string]any, c any) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, ef := range list(get(c, "envFrom")) {
		if get(ef, "secretRef") != nil {
			t.Errorf("a Secret loaded as environment values; mount it and use *_FILE")
		}
		cm := named(objs["ConfigMap"], str(get(ef, "configMapRef", "name")))
		if cm == nil {
			t.Fatalf("envFrom names ConfigMap %v, which the manifests lack", get(ef, "configMapRef", "name"))
		}
		for k, v := range get(cm, "data").(map[string]any) {
			env[k] = str(v)
		}
	}
	for _, e := range list(get(c, "env")) {
		switch {
		case get(e, "valueFrom", "fieldRef") != nil:
			env[str(get(e, "name"))] = "fieldRef:" + str(get(e, "valueFrom", "fieldRef", "fieldPath"))
		case get(e, "valueFrom") != nil:
			env[str(get(e, "name"))] = "ref"
		default:
			env[str(get(e, "name"))] = str(get(e, "value"))
		}
	}
	return env
}

func checkFleetProbes(t *testing.T, d map[string]any, c any, addr string) {
	t.Helper()
	_, port, _ := strings.Cut(addr, ":")
	if !strings.HasPrefix(addr, ":") && !strings.HasPrefix(addr, "0.0.0.0:") {
		t.Errorf("HTTP_ADDR %q must listen on every interface of the pod", addr)
	}
	ann, _ := get(d, "spec", "template", "metadata", "annotations").(map[string]any)
	if str(ann["prometheus.io/scrape"]) != "true" || str(ann["prometheus.io/path"]) != "/metrics" || str(ann["prometheus.io/port"]) != port {
		t.Errorf("prometheus.io annotations %v, want scrape true, path /metrics, port %s", ann, port)
	}
	for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
		if got := str(get(c, probe, "httpGet", "path")); got != want {
			t.Errorf("%s path %q, want %s", probe, got, want)
		}
		if p := probePort(c, get(c, probe, "httpGet", "port")); p != port {
			t.Errorf("%s port %s, want HTTP_ADDR's %s", probe, p, port)
		}
	}
}

// fleetMounts maps each file the container sees (mount path / key) to its
// content in the manifests, and says which come from Secrets.
type fleetFiles struct {
	content map[string]string
	secret  map[string]bool
}

func fleetMounts(t *testing.T, objs map[string][]map[string]any, pod, c any) fleetFiles {
	t.Helper()
	f := fleetFiles{content: map[string]string{}, secret: map[string]bool{}}
	tmp := false
	for _, vm := range list(get(c, "volumeMounts")) {
		dir := str(get(vm, "mountPath"))
		for _, v := range list(get(pod, "volumes")) {
			if str(get(v, "name")) != str(get(vm, "name")) {
				continue
			}
			switch {
			case get(v, "secret") != nil:
				s := named(objs["Secret"], str(get(v, "secret", "secretName")))
				if s == nil {
					t.Errorf("volume %v mounts a Secret the manifests lack", get(v, "name"))
				}
				for k, val := range asMap(get(s, "stringData")) {
					f.content[path.Join(dir, k)], f.secret[path.Join(dir, k)] = str(val), true
				}
			case get(v, "configMap") != nil:
				cm := named(objs["ConfigMap"], str(get(v, "configMap", "name")))
				for k, val := range asMap(get(cm, "data")) {
					f.content[path.Join(dir, k)] = str(val)
				}
			case get(v, "emptyDir") != nil && dir == "/tmp":
				tmp = true
			}
		}
	}
	if !tmp {
		t.Error("want an emptyDir at /tmp (the page spool; the root filesystem is read-only)")
	}
	return f
}

// checkFleetEnv: the worker's variables are agencysync's (FLEET_* ones
// included), DATABASE_URL only as a mounted secret file.
func checkFleetEnv(t *testing.T, env map[string]string, files fleetFiles) {
	t.Helper()
	vars := configVariables()
	for _, v := range config.FleetVariables() {
		vars.known[v.Name] = true
	}
	for k, v := range env {
		if !vars.known[k] {
			t.Errorf("the worker's environment sets %s, which is not a variable of agencysync", k)
		}
		if vars.secrets[k] {
			t.Errorf("the worker's environment gives secret %s as a value; give %s_FILE", k, k)
		}
		if base, ok := strings.CutSuffix(k, "_FILE"); ok && vars.secrets[base] && !files.secret[v] {
			t.Errorf("%s=%s is not a key of a mounted Secret", k, v)
		}
	}
	if env["FLEET_FILE"] == "" || env["DATABASE_URL_FILE"] == "" {
		t.Errorf("want FLEET_FILE and DATABASE_URL_FILE in the worker's environment: %v", env)
	}
}

// checkFleetFile: FLEET_FILE is a mounted ConfigMap file that parses as a
// fleet file, each agency's keys are mounted Secret files, and each
// agency's configuration loads with everything a sync needs.
func checkFleetFile(t *testing.T, env map[string]string, files fleetFiles) {
	t.Helper()
	text, ok := files.content[env["FLEET_FILE"]]
	if !ok || files.secret[env["FLEET_FILE"]] {
		t.Fatalf("FLEET_FILE %s is not a file of a mounted ConfigMap", env["FLEET_FILE"])
	}
	ff, err := config.ParseFleetFile([]byte(text), path.Dir(env["FLEET_FILE"]))
	if err != nil {
		t.Fatalf("the fleet file: %v", err)
	}
	pod := func(k string) (string, bool) {
		v, ok := env[k]
		if strings.HasPrefix(v, "fieldRef:") {
			v = "agencysync-fleet-7c9f8-x2kq4" // a pod's name
		}
		return v, ok
	}
	set, err := config.FleetSettingsFrom(context.Background(), pod)
	if err != nil {
		t.Fatalf("the worker's settings: %v", err)
	}
	if err := ff.CheckSettings(set); err != nil {
		t.Error(err)
	}
	worker := config.Environment{
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		ReadFile: func(p string) ([]byte, error) {
			if v, ok := files.content[p]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		},
	}
	for _, a := range ff.Agencies {
		for _, p := range ff.SecretFiles(a) {
			if !files.secret[p] {
				t.Errorf("agency %s: %s is not a key of a mounted Secret", a.Name, p)
			}
		}
		cfg, err := ff.Config(context.Background(), worker, a, cli.Known())
		if err != nil {
			t.Errorf("agency %s: %v", a.Name, err)
			continue
		}
		if err := cfg.Require(config.NeedSync); err != nil {
			t.Errorf("agency %s: %v", a.Name, err)
		}
	}
	if len(ff.Agencies) < 2 {
		t.Errorf("the example fleet file declares %d agencies; show at least two", len(ff.Agencies))
	}
}
