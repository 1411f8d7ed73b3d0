package charttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/iocache/iocache/server/testpeer"
)

// tool finds a binary `make test` builds into bin/ (HELM, KUSTOMIZE).
func tool(t *testing.T, env, name string) string {
	t.Helper()
	return testpeer.Tool(t, env, name, filepath.Join(repo, "bin"))
}

func run(t *testing.T, bin string, args ...string) ([]byte, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.Bytes(), errors.New(err.Error() + ": " + errb.String())
	}
	return out.Bytes(), nil
}

const releaseNS = "iocache-system"

// everyOption turns on every optional part of the chart.
var everyOption = []string{
	"--set", "metrics.serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true",
	"--set", "dashboards.enabled=true", "--set", "exampleInstance.enabled=true",
	"--set", "replicaCount=2", "--set", "podLabels.team=cache", "--set", "priorityClassName=",
	"--set", "serviceAccount.annotations.example\\.com/role=cache",
}

func helmTemplate(t *testing.T, extra ...string) []byte {
	t.Helper()
	helm := tool(t, "HELM", "helm")
	out, err := run(t, helm, append([]string{"template", "iocache", chartDir, "--namespace", releaseNS}, extra...)...)
	if err != nil {
		t.Fatalf("helm template %v: %v", extra, err)
	}
	return out
}

func TestHelmLint(t *testing.T) {
	helm := tool(t, "HELM", "helm")
	for _, args := range [][]string{nil, everyOption, {"--set", "rbac.namespaced=true", "--set", "metrics.secure=false"}} {
		if out, err := run(t, helm, append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
			t.Fatalf("helm lint %v: %v\n%s", args, err, out)
		}
	}
}

func TestValuesSchemaRejectsWrongTypes(t *testing.T) {
	helm := tool(t, "HELM", "helm")
	for _, bad := range [][]string{
		{"--set", "replicaCount=many"},
		{"--set", "metrics.port=eighty"},
		{"--set", "logLevel=verbose"},
		{"--set", "exampleInstance.cores=0"},
		{"--set", "unknownKey=1"},
		{"--set", "image.pullPolicy=Sometimes"},
	} {
		_, err := run(t, helm, append([]string{"template", "x", chartDir}, bad...)...)
		if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
			t.Errorf("values %v accepted (err %v)", bad, err)
		}
	}
}

// TestChartFollowsGeneratedSources fails when the chart's CRDs or RBAC rules drift from what
// controller-gen generates (make manifests copies them).
func TestChartFollowsGeneratedSources(t *testing.T) {
	bases, _ := filepath.Glob(filepath.Join(repo, "config", "crd", "bases", "*.yaml"))
	if len(bases) == 0 {
		t.Fatal("no CRDs in config/crd/bases")
	}
	for _, b := range bases {
		want, _ := os.ReadFile(b)
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(b)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("charts/iocache/crds/%s differs from %s: run make manifests", filepath.Base(b), b)
		}
	}
	role, _ := os.ReadFile(filepath.Join(repo, "config", "rbac", "role.yaml"))
	rules, _ := os.ReadFile(filepath.Join(chartDir, "files", "manager-rules.yaml"))
	if i := bytes.Index(role, []byte("rules:")); i < 0 || !bytes.Equal(role[i:], rules) {
		t.Error("charts/iocache/files/manager-rules.yaml differs from config/rbac/role.yaml: run make manifests")
	}
	chart, _ := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	mk, _ := os.ReadFile(filepath.Join(repo, "Makefile"))
	version := regexp.MustCompile(`(?m)^VERSION \?= (\S+)`).FindSubmatch(mk)
	if version == nil || !bytes.Contains(chart, []byte("\nversion: "+string(version[1])+"\n")) ||
		!bytes.Contains(chart, []byte("\nappVersion: \""+string(version[1])+"\"\n")) {
		t.Errorf("Chart.yaml version/appVersion do not follow the Makefile's VERSION")
	}
}

const (
	// repo is the repository's root, seen from this package.
	repo = "../.."
	// chartDir is the chart under test.
	chartDir = repo + "/charts/iocache"
)

var (
	envOnce sync.Once
	env     *envtest.Environment
	envCl   client.Client
	envErr  error
)

// TestMain stops the API server the tests started, whatever they did: leaving a kube-apiserver,
// an etcd and their temporary folder behind is what `make test`'s final check fails on.
func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// apiServer starts one real kube-apiserver for the package with the chart's CRDs and the vendored
// prometheus-operator CRDs installed; TestMain stops it.
func apiServer(t *testing.T) client.Client {
	t.Helper()
	testpeer.KubebuilderAssets(t)
	envOnce.Do(func() {
		e := &envtest.Environment{
			CRDDirectoryPaths:     []string{filepath.Join(chartDir, "crds"), filepath.Join("testdata", "crds")},
			ErrorIfCRDPathMissing: true,
		}
		cfg, err := e.Start()
		// Start may fail after starting etcd or the API server: stop whatever it started.
		env = e
		if err != nil {
			envErr = err
			return
		}
		s := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(s)
		envCl, envErr = client.New(cfg, client.Options{Scheme: s})
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	return envCl
}

// ensureNamespace creates a namespace (for real: dry-run objects need it to exist), enforcing
// the restricted Pod Security Standard so the API server judges every pod put there.
func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func decode(t *testing.T, manifests []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if err == io.EOF {
				return out
			}
			t.Fatalf("decoding manifests: %v", err)
		}
		if len(u.Object) > 0 {
			out = append(out, &u)
		}
	}
}

// applyDryRun has the API server validate every object (schema, CEL, admission) without storing
// it. Namespaces and CRDs are created for real, since later objects need them.
func applyDryRun(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace":
			ensureNamespace(t, c, o.GetName())
			continue
		case "CustomResourceDefinition":
			continue // installed by the test environment from the same files
		}
		if o.GetNamespace() == "" && namespaced(o.GetKind()) {
			o.SetNamespace(releaseNS)
		}
		if err := c.Create(ctx, o.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("API server rejects %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		if podSpec, ok, _ := unstructured.NestedMap(o.Object, "spec", "template"); ok && o.GetKind() == "Deployment" {
			// Pod Security admission judges pods, not Deployments: submit the pod the Deployment
			// would create in a namespace that enforces "restricted".
			pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
			pod.Object["metadata"] = map[string]any{"generateName": o.GetName() + "-", "namespace": o.GetNamespace()}
			pod.Object["spec"] = podSpec["spec"]
			if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
				t.Errorf("the pod of Deployment %s fails Pod Security \"restricted\": %v", o.GetName(), err)
			}
		}
	}
}

func namespaced(kind string) bool {
	switch kind {
	case "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace":
		return false
	}
	return true
}

func TestChartAgainstAPIServer(t *testing.T) {
	c := apiServer(t)
	ensureNamespace(t, c, releaseNS)
	for name, args := range map[string][]string{
		"defaults":          nil,
		"every option":      everyOption,
		"namespaced, plain": {"--set", "rbac.namespaced=true", "--set", "metrics.secure=false", "--set", "leaderElection.enabled=false"},
	} {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, helmTemplate(t, args...))
			kinds := map[string]bool{}
			for _, o := range objs {
				kinds[o.GetKind()] = true
			}
			if name == "every option" {
				for _, k := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "CacheInstance"} {
					if !kinds[k] {
						t.Errorf("every-option render has no %s", k)
					}
				}
			}
			applyDryRun(t, c, objs)
		})
	}
}

// TestInstallerAndSamplesAgainstAPIServer validates what `make build-installer` writes
// (kustomize build config/default) and config/samples.
func TestInstallerAndSamplesAgainstAPIServer(t *testing.T) {
	c := apiServer(t)
	kustomize := tool(t, "KUSTOMIZE", "kustomize")
	installer, err := run(t, kustomize, "build", filepath.Join(repo, "config", "default"))
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	objs := decode(t, installer)
	if len(objs) < 5 {
		t.Fatalf("installer has only %d objects", len(objs))
	}
	applyDryRun(t, c, objs)
	samples, err := run(t, kustomize, "build", filepath.Join(repo, "config", "samples"))
	if err != nil {
		t.Fatalf("kustomize build config/samples: %v", err)
	}
	ensureNamespace(t, c, "samples")
	for _, o := range decode(t, samples) {
		o.SetNamespace("samples")
		if err := c.Create(context.Background(), o, client.DryRunAll); err != nil {
			t.Errorf("sample %s rejected: %v", o.GetName(), err)
		}
	}
}

// TestRenderedDefaults spot-checks what users rely on in the default render.
func TestRenderedDefaults(t *testing.T) {
	objs := decode(t, helmTemplate(t))
	var deploy *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deploy = o
		}
	}
	if deploy == nil {
		t.Fatal("no Deployment rendered")
	}
	b, _ := yaml.Marshal(deploy.Object)
	for _, want := range []string{"ghcr.io/iocache/iocache:v0.1.0", "--leader-elect", "--metrics-secure", "readOnlyRootFilesystem: true", "runAsNonRoot: true"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("default Deployment lacks %q", want)
		}
	}
}
