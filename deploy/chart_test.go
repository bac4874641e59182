// Package deploy holds no code: its tests validate the Helm chart in chart/
// and the engine examples in examples/ offline, with the pinned helm and
// kubeconform that `make deploy-tools` builds into .dev/tools/bin and the
// JSON schemas kept in schemas/. A missing tool is a failure, not a skip.
package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	chartDir    = "chart"
	examplesDir = "examples"
	// kubeVersion is the Kubernetes version the chart is rendered for, that of
	// the schemas in schemas/.
	kubeVersion = "1.34.0"
	namespace   = "billing"
)

// schemaLocation is kubeconform's template for the schemas kept in schemas/
// (see schemas/README.md); nothing is fetched.
var schemaLocation = filepath.Join("schemas", "{{ .Group }}", "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json")

var roles = []string{"api", "relay", "projector", "invoicer"}

// valuesFiles are the chart's values: the defaults ("") and every
// values-*.yaml next to them.
func valuesFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "values-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no values-*.yaml in the chart")
	}
	return append([]string{""}, files...)
}

// tool returns the path of a pinned tool; a missing one fails the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", ".dev", "tools", "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing (%v): run `make deploy-tools`", name, err)
	}
	return p
}

func run(t *testing.T, stdin io.Reader, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = stdin
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// render runs helm template with a values file ("" for the defaults).
func render(t *testing.T, values string, set ...string) string {
	t.Helper()
	args := []string{"template", "o2i", chartDir, "--namespace", namespace, "--kube-version", kubeVersion}
	if values != "" {
		args = append(args, "--values", values)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := run(t, nil, tool(t, "helm"), args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

var summary = regexp.MustCompile(`Summary: (\d+) resources? found (?:in \d+ files?|parsing stdin) - Valid: (\d+), Invalid: (\d+), Errors: (\d+), Skipped: (\d+)`)

// kubeconform validates manifests (stdin when paths is empty) strictly
// against the local schemas and returns its output and the number of valid
// objects; an error when anything is invalid, has no schema or is skipped.
func kubeconform(t *testing.T, manifests string, paths ...string) (string, int, error) {
	t.Helper()
	args := []string{"-strict", "-summary", "-schema-location", schemaLocation}
	var stdin io.Reader
	if len(paths) == 0 {
		stdin = strings.NewReader(manifests)
		args = append(args, "-")
	}
	out, err := run(t, stdin, tool(t, "kubeconform"), append(args, paths...)...)
	m := summary.FindStringSubmatch(out)
	if m == nil {
		return out, 0, fmt.Errorf("no summary (%v)", err)
	}
	n, _ := strconv.Atoi(m[1])
	valid, _ := strconv.Atoi(m[2])
	if err != nil || valid != n || m[3] != "0" || m[4] != "0" || m[5] != "0" {
		return out, valid, fmt.Errorf("not all valid (%v)", err)
	}
	return out, valid, nil
}

func TestLint(t *testing.T) {
	t.Parallel()
	for _, v := range valuesFiles(t) {
		args := []string{"lint", "--strict", chartDir, "--kube-version", kubeVersion}
		if v != "" {
			args = append(args, "--values", v)
		}
		if out, err := run(t, nil, tool(t, "helm"), args...); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func TestRenderedObjectsAreValid(t *testing.T) {
	t.Parallel()
	for _, v := range valuesFiles(t) {
		manifests := render(t, v)
		out, n, err := kubeconform(t, manifests)
		if err != nil {
			t.Errorf("values %q: kubeconform: %v\n%s", v, err, out)
		}
		if want := strings.Count(manifests, "\nkind: "); n != want {
			t.Errorf("values %q: %d objects valid, want %d", v, n, want)
		}
		t.Logf("values %q: %d objects valid", v, n)
	}
}

func TestExamplesAreValid(t *testing.T) {
	t.Parallel()
	out, n, err := kubeconform(t, "", examplesDir)
	if err != nil {
		t.Fatalf("kubeconform %s: %v\n%s", examplesDir, err, out)
	}
	if n < 9 {
		t.Errorf("%d example objects valid, want at least 9", n)
	}
	t.Logf("examples: %d objects valid", n)
}

// The validation catches a misspelled field, in a core kind and in a custom
// resource, and a kind it has no schema for.
func TestValidationRefusesMistakes(t *testing.T) {
	t.Parallel()
	manifests := render(t, filepath.Join(chartDir, "values-production.yaml"))
	for _, c := range []struct{ name, old, new, says string }{
		{"misspelled Deployment field", "readinessProbe:", "readinesProbe:", "readinesProbe"},
		{"misspelled ServiceMonitor field", "interval: 30s", "intervall: 30s", "intervall"},
		{"misspelled PodDisruptionBudget field", "maxUnavailable: 1\n  selector:", "maxUnavailabe: 1\n  selector:", "maxUnavailabe"},
		{"kind without a schema", "kind: ConfigMap", "kind: ConfigMapp", "could not find schema"},
	} {
		if !strings.Contains(manifests, c.old) {
			t.Fatalf("%s: %q not rendered", c.name, c.old)
		}
		broken := strings.Replace(manifests, c.old, c.new, 1)
		out, _, err := kubeconform(t, broken)
		if err == nil {
			t.Errorf("%s: kubeconform accepted it\n%s", c.name, out)
		} else if !strings.Contains(out, c.says) || !summary.MatchString(out) {
			t.Errorf("%s: refused, but not for %q\n%s", c.name, c.says, out)
		}
	}
}

// object is one rendered Kubernetes object.
type object map[string]any

func (o object) get(path ...string) any {
	var v any = map[string]any(o)
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func (o object) kind() string { s, _ := o["kind"].(string); return s }
func (o object) name() string { s, _ := o.get("metadata", "name").(string); return s }

func decode(t *testing.T, manifests string) []object {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(manifests))
	var objs []object
	for {
		var o map[string]any // not object: yaml would make every nested map one
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decode rendered manifests: %v", err)
		}
		if o != nil {
			objs = append(objs, object(o))
		}
	}
}

func find(objs []object, kind, name string) object {
	for _, o := range objs {
		if o.kind() == kind && o.name() == name {
			return o
		}
	}
	return nil
}

var secretVars = []string{"O2I_DATABASE_URL", "O2I_REDIS_URL", "O2I_S3_ACCESS_KEY", "O2I_S3_SECRET_KEY", "O2I_SMTP_URL"}

// Every role has its probes, PDB, resources, a non-root read-only
// container, a metrics port that is scraped, a grace period longer than the
// shutdown timeout, and its secrets only by reference.
func TestRoleProperties(t *testing.T) {
	t.Parallel()
	for _, v := range valuesFiles(t) {
		objs := decode(t, render(t, v))
		cm := find(objs, "ConfigMap", "o2i")
		if cm == nil {
			t.Fatalf("values %q: no ConfigMap o2i", v)
		}
		shutdown, err := strconv.Atoi(strings.TrimSuffix(fmt.Sprint(cm.get("data", "O2I_SHUTDOWN_TIMEOUT")), "s"))
		if err != nil {
			t.Fatalf("values %q: O2I_SHUTDOWN_TIMEOUT: %v", v, err)
		}
		for _, s := range secretVars {
			if _, ok := cm.get("data").(map[string]any)[s]; ok {
				t.Errorf("values %q: %s in the ConfigMap", v, s)
			}
		}
		set := "defaults"
		if v != "" {
			set = filepath.Base(v)
		}
		for _, role := range roles {
			t.Run(set+"/"+role, func(t *testing.T) {
				checkRole(t, objs, role, shutdown)
			})
		}
		checkScrape(t, objs)
	}
}

func checkRole(t *testing.T, objs []object, role string, shutdown int) {
	t.Helper()
	d := find(objs, "Deployment", "o2i-"+role)
	if d == nil {
		t.Fatalf("no Deployment o2i-%s", role)
	}
	spec := object(d.get("spec", "template", "spec").(map[string]any))
	if g, _ := spec["terminationGracePeriodSeconds"].(int); g <= shutdown {
		t.Errorf("terminationGracePeriodSeconds %d, want more than the shutdown timeout %ds", g, shutdown)
	}
	if s := spec.get("securityContext", "runAsNonRoot"); s != true {
		t.Errorf("pod runAsNonRoot = %v", s)
	}
	if tsc, _ := spec["topologySpreadConstraints"].([]any); len(tsc) == 0 {
		t.Error("no topologySpreadConstraints")
	}
	cs, _ := spec["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	c := object(cs[0].(map[string]any))
	if args := fmt.Sprint(c["args"]); args != fmt.Sprintf("[serve --roles %s]", role) {
		t.Errorf("args %s", args)
	}
	for _, p := range []string{"livenessProbe", "startupProbe"} {
		if c[p] == nil {
			t.Errorf("no %s", p)
		}
		if c.get(p, "httpGet") != nil || c.get(p, "exec") != nil {
			t.Errorf("%s checks more than the process", p)
		}
	}
	if role == "api" {
		if path := c.get("readinessProbe", "httpGet", "path"); path != "/api/health" {
			t.Errorf("readiness probe path %v, want /api/health", path)
		}
	} else if c["readinessProbe"] != nil {
		t.Error("a worker has a readiness probe")
	}
	for _, r := range []string{"requests", "limits"} {
		if c.get("resources", r, "memory") == nil {
			t.Errorf("no memory %s", r)
		}
	}
	if c.get("resources", "requests", "cpu") == nil {
		t.Error("no cpu request")
	}
	sc := object(c["securityContext"].(map[string]any))
	if sc["runAsNonRoot"] != true || sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false ||
		fmt.Sprint(sc.get("capabilities", "drop")) != "[ALL]" {
		t.Errorf("container securityContext %v", sc)
	}
	var metrics bool
	for _, p := range c["ports"].([]any) {
		if p.(map[string]any)["name"] == "metrics" {
			metrics = true
		}
	}
	if !metrics {
		t.Error("no port named metrics")
	}
	env, _ := c["env"].([]any)
	refs := map[string]bool{}
	for _, e := range env {
		e := object(e.(map[string]any))
		if e.get("valueFrom", "secretKeyRef") != nil {
			refs[e["name"].(string)] = true
		} else if slices.Contains(secretVars, e["name"].(string)) {
			t.Errorf("%s not from a Secret", e["name"])
		}
	}
	for _, s := range secretVars {
		if !refs[s] {
			t.Errorf("%s is not a secretKeyRef", s)
		}
	}
	pdb := find(objs, "PodDisruptionBudget", "o2i-"+role)
	if pdb == nil {
		t.Fatal("no PodDisruptionBudget")
	}
	if got := pdb.get("spec", "selector", "matchLabels", "app.kubernetes.io/component"); got != role {
		t.Errorf("PodDisruptionBudget selects component %v", got)
	}
}

// checkScrape: the metrics Service selects every role's pods by the port
// named metrics, and a ServiceMonitor (when rendered) scrapes that port.
func checkScrape(t *testing.T, objs []object) {
	t.Helper()
	svc := find(objs, "Service", "o2i-metrics")
	if svc == nil {
		t.Fatal("no Service o2i-metrics")
	}
	if svc.get("spec", "selector", "app.kubernetes.io/component") != nil {
		t.Error("the metrics Service selects one role only")
	}
	if svc.get("spec", "publishNotReadyAddresses") != true {
		t.Error("the metrics Service leaves pods that are not ready unscraped")
	}
	ports := fmt.Sprint(svc.get("spec", "ports"))
	if !strings.Contains(ports, "name:metrics") || !strings.Contains(ports, "targetPort:metrics") {
		t.Errorf("metrics Service ports %s", ports)
	}
	if sm := find(objs, "ServiceMonitor", "o2i"); sm != nil {
		eps := fmt.Sprint(sm.get("spec", "endpoints"))
		if !strings.Contains(eps, "port:metrics") || !strings.Contains(eps, "path:/metrics") {
			t.Errorf("ServiceMonitor endpoints %s", eps)
		}
		if got := sm.get("spec", "selector", "matchLabels", "app.kubernetes.io/component"); got != "metrics" {
			t.Errorf("ServiceMonitor selects component %v, want metrics", got)
		}
	}
}

// The production values render the optional objects: ServiceMonitor,
// PrometheusRule, the invoicer's ScaledObject; the alerts use only metrics
// the service registers.
func TestProductionObjects(t *testing.T) {
	t.Parallel()
	objs := decode(t, render(t, filepath.Join(chartDir, "values-production.yaml")))
	for _, k := range []struct{ kind, name string }{
		{"ServiceMonitor", "o2i"}, {"PrometheusRule", "o2i"}, {"ScaledObject", "o2i-invoicer"}, {"ConfigMap", "o2i-dashboards"},
		{"HorizontalPodAutoscaler", "o2i-api"}, {"NetworkPolicy", "o2i-default-deny"}, {"Job", "o2i-migrate"},
		{"Service", "o2i-api"},
	} {
		if find(objs, k.kind, k.name) == nil {
			t.Errorf("no %s %s", k.kind, k.name)
		}
	}
	if d := find(objs, "Deployment", "o2i-invoicer"); d != nil && d.get("spec", "replicas") != nil {
		t.Error("the invoicer sets replicas although KEDA owns them")
	}
	if j := find(objs, "Job", "o2i-migrate"); j != nil {
		if hook := j.get("metadata", "annotations", "helm.sh/hook"); hook != "pre-install,pre-upgrade" {
			t.Errorf("migration hook %v", hook)
		}
		if args := fmt.Sprint(j.get("spec", "template", "spec", "containers").([]any)[0].(map[string]any)["args"]); args != "[migrate]" {
			t.Errorf("migration args %s", args)
		}
	}
	exported := registeredMetrics(t)
	rule := find(objs, "PrometheusRule", "o2i")
	metric := regexp.MustCompile(`\bo2i_[a-z_]+`)
	var n int
	for _, g := range rule.get("spec", "groups").([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			expr := r.(map[string]any)["expr"].(string)
			for _, m := range metric.FindAllString(expr, -1) {
				n++
				base := m
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					base = strings.TrimSuffix(base, s)
				}
				if !exported[base] {
					t.Errorf("alert %v uses %s, which the service does not register", r.(map[string]any)["alert"], m)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no alert uses a metric of the service")
	}
}

// registeredMetrics are the metric names the service's Go code registers.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	name := regexp.MustCompile(`Name:\s*"(o2i_[a-z_]+)"`)
	found := map[string]bool{}
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".dev" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range name.FindAllSubmatch(b, -1) {
			found[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 10 {
		t.Fatalf("found only %d registered metrics: %v", len(found), found)
	}
	return found
}

// No secret value in any values file: credentials are Secret references.
func TestNoSecretInValues(t *testing.T) {
	t.Parallel()
	suspicious := regexp.MustCompile(`(?i)(://[^/\s:@]+:[^@\s]+@|\b(sk|rk|pk)_(live|test)_|whsec_|password\s*:|secret\s*:\s*\S|-----BEGIN)`)
	for _, v := range valuesFiles(t) {
		if v == "" {
			v = filepath.Join(chartDir, "values.yaml")
		}
		b, err := os.ReadFile(v)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if m := suspicious.FindString(line); m != "" {
				t.Errorf("%s:%d looks like a secret value (%q)", v, i+1, m)
			}
		}
	}
}

// The topics have at least as many partitions as the production values run
// invoicer and projector replicas, three replicas, min.insync.replicas 2
// and 7 days retention; the archive bucket is created with object lock.
func TestExampleEngines(t *testing.T) {
	t.Parallel()
	prod := decode(t, render(t, filepath.Join(chartDir, "values-production.yaml")))
	most := 0
	for _, name := range []string{"o2i-invoicer", "o2i-projector"} {
		if d := find(prod, "Deployment", name); d != nil {
			if r, ok := d.get("spec", "replicas").(int); ok {
				most = max(most, r)
			}
		}
	}
	if so := find(prod, "ScaledObject", "o2i-invoicer"); so != nil {
		most = max(most, so.get("spec", "maxReplicaCount").(int))
	}
	b, err := os.ReadFile(filepath.Join(examplesDir, "kafka.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, o := range decode(t, string(b)) {
		if o.kind() != "KafkaTopic" {
			continue
		}
		name := fmt.Sprint(o.get("spec", "topicName"))
		topics = append(topics, name)
		if p, _ := o.get("spec", "partitions").(int); p < most {
			t.Errorf("%s: %d partitions, fewer than the %d consumers the production values allow", name, p, most)
		}
		if r := o.get("spec", "replicas"); r != 3 {
			t.Errorf("%s: replicas %v, want 3", name, r)
		}
		if m := o.get("spec", "config", "min.insync.replicas"); m != 2 {
			t.Errorf("%s: min.insync.replicas %v, want 2", name, m)
		}
		if r := o.get("spec", "config", "retention.ms"); r != 7*24*3600*1000 {
			t.Errorf("%s: retention.ms %v, want 7 days", name, r)
		}
	}
	slices.Sort(topics)
	if want := []string{"o2i.invoices", "o2i.orders", "o2i.payments"}; !slices.Equal(topics, want) {
		t.Errorf("topics %v, want %v", topics, want)
	}
	m, err := os.ReadFile(filepath.Join(examplesDir, "minio.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mc mb --ignore-existing --with-lock o2i/o2i-archive\n", "mc retention set --default COMPLIANCE", "mc mb --ignore-existing o2i/o2i-archive-test\n"} {
		if !bytes.Contains(m, []byte(want)) {
			t.Errorf("the bucket Job does not run %q", want)
		}
	}
}

// values.schema.json refuses a secret as plain configuration, an unknown
// value and a weaker security context.
func TestValuesSchemaRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, set string }{
		{"secret variable in extraEnv", "config.extraEnv.O2I_SMTP_URL=smtp://user:pass@smtp.example.com:587"},
		{"misspelled value", "roles.api.replica=2"},
		{"writable root filesystem", "securityContext.readOnlyRootFilesystem=false"},
		{"root", "podSecurityContext.runAsNonRoot=false"},
		{"no grace beyond the shutdown timeout", "terminationExtraSeconds=0"},
		{"collector without a scheme", "config.otlpEndpoint=collector:4318"},
		{"dashboard label not a string", "metrics.dashboards.labels.grafana_dashboard=1"},
	} {
		args := []string{"template", "o2i", chartDir, "--kube-version", kubeVersion, "--set", c.set}
		out, err := run(t, nil, tool(t, "helm"), args...)
		if err == nil {
			t.Errorf("%s: helm template --set %s succeeded", c.name, c.set)
		} else if !strings.Contains(out, "values don't meet the specifications of the schema") {
			t.Errorf("%s: failed, but not on the schema:\n%s", c.name, out)
		}
	}
}

// dashboardFile is the Grafana dashboard the chart ships.
const dashboardFile = "chart/dashboards/o2i.json"

// The dashboard ConfigMap carries the Grafana sidecar's label and the
// dashboard file as it is; every metric a panel or variable queries is one
// the service registers, one of the Go and process collectors serve
// registers, or the Kafka Exporter's lag that the Kafka example enables;
// and the panels cover what operations watch.
func TestDashboard(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}

	// Shipped as a ConfigMap for Grafana's sidecar, off by default.
	prod := decode(t, render(t, filepath.Join(chartDir, "values-production.yaml")))
	cm := find(prod, "ConfigMap", "o2i-dashboards")
	if cm == nil {
		t.Fatal("the production values render no dashboard ConfigMap")
	}
	if l := cm.get("metadata", "labels", "grafana_dashboard"); l != "1" {
		t.Errorf("dashboard ConfigMap label grafana_dashboard = %#v, want \"1\"", l)
	}
	if got := cm.get("data", "o2i.json"); got != strings.TrimSuffix(string(raw), "\n") {
		t.Errorf("the ConfigMap's o2i.json is not %s", dashboardFile)
	}
	if find(decode(t, render(t, "")), "ConfigMap", "o2i-dashboards") != nil {
		t.Error("the default values render the dashboard ConfigMap")
	}

	exported := registeredMetrics(t)
	external := externalMetrics(t)
	selector := regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
	variable := regexp.MustCompile(`label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	var exprs []string
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			exprs = append(exprs, fmt.Sprint(q["query"]))
		}
	}
	for _, expr := range exprs {
		names := selector.FindAllStringSubmatch(expr, -1)
		names = append(names, variable.FindAllStringSubmatch(expr, -1)...)
		if len(names) == 0 {
			t.Errorf("query %q names no metric", expr)
		}
		for _, m := range names {
			base := m[1]
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, s)
			}
			used[base] = true
			if !exported[base] && !external[base] {
				t.Errorf("query %q uses %s, which nothing exports", expr, m[1])
			}
		}
	}
	for _, want := range []string{
		"o2i_http_requests_total", "o2i_http_request_duration_seconds", // API rate, errors, duration
		"o2i_outbox_published_total", "o2i_outbox_backlog", "o2i_outbox_oldest_seconds", // relay, outbox age
		"o2i_projection_events_total", "o2i_projection_lag_seconds", // projector; invoices/s by event type
		"kafka_consumergroup_lag", "o2i_tasks_open", "o2i_outbox_dead_letters_total", "o2i_projection_dead_letters_total",
		"process_cpu_seconds_total",
	} {
		if !used[want] {
			t.Errorf("no panel queries %s", want)
		}
	}
	if !strings.Contains(strings.Join(exprs, "\n"), `type="invoice.archived"`) {
		t.Error("no panel shows archived invoices per second")
	}
}

// externalMetrics are the metrics the dashboard may use that the service's
// code does not name: those of the Go and process collectors serve
// registers, Prometheus's own up, and the consumer lag of Strimzi's Kafka
// Exporter, enabled in the Kafka example.
func externalMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{"up": true}
	serve, err := os.ReadFile(filepath.Join("..", "cmd", "o2i", "serve.go"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(serve, []byte("collectors.NewProcessCollector(")) {
		out["process_cpu_seconds_total"], out["process_resident_memory_bytes"] = true, true
	}
	if bytes.Contains(serve, []byte("collectors.NewGoCollector(")) {
		out["go_goroutines"] = true
	}
	kafka, err := os.ReadFile(filepath.Join(examplesDir, "kafka.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range decode(t, string(kafka)) {
		if o.kind() == "Kafka" && o.get("spec", "kafkaExporter") != nil {
			out["kafka_consumergroup_lag"] = true
		}
	}
	return out
}

// config.otlpEndpoint reaches every role as O2I_OTLP_ENDPOINT (unset when
// empty) and networkPolicy.otlpCollector opens the egress to the collector.
func TestTracingWiring(t *testing.T) {
	t.Parallel()
	cm := find(decode(t, render(t, "")), "ConfigMap", "o2i")
	if cm == nil {
		t.Fatal("no ConfigMap o2i")
	}
	if v := cm.get("data", "O2I_OTLP_ENDPOINT"); v != nil {
		t.Errorf("O2I_OTLP_ENDPOINT = %v by default, want unset (tracing off)", v)
	}
	objs := decode(t, render(t, "", "config.otlpEndpoint=http://otel-collector.monitoring:4318",
		"networkPolicy.otlpCollector.port=4318", "networkPolicy.otlpCollector.podSelector.matchLabels.app=otel-collector"))
	if v := find(objs, "ConfigMap", "o2i").get("data", "O2I_OTLP_ENDPOINT"); v != "http://otel-collector.monitoring:4318" {
		t.Errorf("O2I_OTLP_ENDPOINT = %v", v)
	}
	for _, role := range roles {
		d := find(objs, "Deployment", "o2i-"+role)
		if d == nil {
			t.Fatalf("no Deployment o2i-%s", role)
		}
		if !strings.Contains(fmt.Sprint(d.get("spec", "template", "spec", "containers")), "configMapRef:map[name:o2i]") {
			t.Errorf("%s does not take the ConfigMap o2i", role)
		}
	}
	egress := fmt.Sprint(find(objs, "NetworkPolicy", "o2i-egress").get("spec", "egress"))
	if !strings.Contains(egress, "app:otel-collector") || !strings.Contains(egress, "port:4318") {
		t.Errorf("no egress to the collector: %s", egress)
	}
	out, _, err := kubeconform(t, render(t, "", "config.otlpEndpoint=http://otel-collector.monitoring:4318",
		"networkPolicy.otlpCollector.port=4318", "networkPolicy.otlpCollector.podSelector.matchLabels.app=otel-collector"))
	if err != nil {
		t.Errorf("kubeconform: %v\n%s", err, out)
	}
}
