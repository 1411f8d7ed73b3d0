package controllers

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/config"
)

// Live configuration: the part of the rendered config the server takes through CONFIG SET is
// applied to each running pod and read back, so that a change of maxmemory-policy or spec.config
// keeps the cache's data; only the rest is on the pod template (serverConfig.RestartHash). The
// ConfigMap always holds the whole config, so a pod that starts for any reason starts with it.

// Condition reasons of ConfigApplied; api/v1alpha1 documents them.
const (
	reasonAppliedLive      = "AppliedLive"
	reasonRolled           = "Rolled"
	reasonApplyingLive     = "ApplyingLive"
	reasonLiveChangeFailed = "LiveChangeFailed"
)

// liveRetry is how soon a live change that failed (a pod unreachable, a value refused) is tried
// again.
const liveRetry = 15 * time.Second

// Timeouts of the operator's connection to a server pod: it sends a handful of commands.
const (
	liveDialTimeout = 3 * time.Second
	liveIOTimeout   = 5 * time.Second
)

// configChange is how this pass brought a new config to the pods: rolled (a new pod template) or
// live, and in words why or what.
type configChange struct {
	rolled bool
	detail string
}

// podAddress is where the operator reaches a pod's server.
func podAddress(pod *corev1.Pod) string {
	return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(serverPort))
}

// reconcileLiveConfig applies the live part of the config to every ready pod that runs the current
// pod template and has not been verified with the current config since it (re)started, and records
// what each pod runs. A pod still rolling gets the whole config from the ConfigMap when it starts.
func (r *CacheInstanceReconciler) reconcileLiveConfig(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	if inst.rollout == nil {
		return nil, nil
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(inst.Namespace), client.MatchingLabels(selectorLabels(inst.CacheInstance))); err != nil {
		return nil, fmt.Errorf("listing the instance's pods: %w", err)
	}
	// The surge pod is the surge step's (cacheinstance_surge.go).
	pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return isSurgePod(inst.CacheInstance, &p) })
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	known := map[string]cachev1alpha1.PodConfigStatus{}
	for _, p := range inst.Status.Pods {
		known[p.Name] = p
	}
	cfg := inst.config
	inst.podConfigs = []cachev1alpha1.PodConfigStatus{}
	inst.liveInEffect = true
	var applied []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !servingCurrentTemplate(pod, cfg) {
			inst.liveInEffect = false
			continue
		}
		// A pod still smaller than spec.memory (being resized in place) gets the larger maxmemory
		// once it has grown; until then it runs what it was verified with, which its entry keeps
		// saying (with the live directives to set back, should the config drop one meanwhile).
		if memoryBelowSpec(pod, inst.Spec.Memory) {
			inst.liveInEffect = false
			if k, ok := known[pod.Name]; ok && k.UID == string(pod.UID) {
				inst.podConfigs = append(inst.podConfigs, k)
			}
			continue
		}
		now := cachev1alpha1.PodConfigStatus{Name: pod.Name, UID: string(pod.UID), Restarts: serverRestarts(pod), ConfigHash: cfg.Hash, UsersHash: inst.usersHash, Live: cfg.LiveNames}
		k, ok := known[pod.Name]
		if ok && samePodConfig(k, now) {
			inst.podConfigs = append(inst.podConfigs, now)
			continue
		}
		// The live directives the pod was last verified with that this config no longer has go
		// back to the server's default. (A restarted or new pod read them from its file already:
		// setting them again changes nothing.)
		var dropped []string
		for _, name := range k.Live {
			if !slices.Contains(cfg.LiveNames, name) && liveDirective(name) {
				dropped = append(dropped, name)
			}
		}
		changes, err := r.applyLive(ctx, r.serverAddress(pod), inst.creds(), cfg.Live, dropped)
		if err == nil && len(inst.users) > 0 {
			var set []string
			set, err = applyUsers(ctx, r.serverAddress(pod), inst.creds(), inst.users, inst.managesUsers())
			// A change of users on a running server is news; setting them on a pod that just
			// started (or restarted) is part of its start, not a change.
			if ok && k.UID == now.UID && k.Restarts == now.Restarts && k.UsersHash != now.UsersHash {
				changes = append(changes, set...)
			}
		}
		if err != nil {
			inst.liveInEffect = false
			inst.liveFailure = fmt.Sprintf("pod %s: %v", pod.Name, err)
			if ok && k.UID == now.UID {
				inst.podConfigs = append(inst.podConfigs, k)
			}
			continue
		}
		inst.podConfigs = append(inst.podConfigs, now)
		if len(changes) > 0 {
			applied = append(applied, fmt.Sprintf("pod %s: %s", pod.Name, strings.Join(changes, ", ")))
		}
	}
	if inst.liveFailure != "" {
		msg := fmt.Sprintf("Config %s could not be applied live (retried every %s; deleting the pod restarts it with the whole config): %s",
			cfg.Hash, liveRetry, inst.liveFailure)
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, reasonLiveChangeFailed, "ApplyConfig", "%s", msg)
		inst.block(reasonLiveChangeFailed, msg)
		inst.recheckIn(liveRetry)
		return nil, nil
	}
	if len(applied) > 0 && inst.change == nil {
		inst.change = &configChange{detail: strings.Join(applied, "; ")}
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, reasonAppliedLive, "ApplyConfig",
			"Config %s applied live, pods kept their data (verified with CONFIG GET): %s", cfg.Hash, inst.change.detail)
	}
	return nil, nil
}

// samePodConfig is true when a pod's recorded config is the one it would be recorded with now.
func samePodConfig(a, b cachev1alpha1.PodConfigStatus) bool {
	return a.Name == b.Name && a.UID == b.UID && a.Restarts == b.Restarts && a.ConfigHash == b.ConfigHash &&
		a.UsersHash == b.UsersHash && slices.Equal(a.Live, b.Live)
}

// serverAddress is podAddress unless a test says otherwise.
func (r *CacheInstanceReconciler) serverAddress(pod *corev1.Pod) string {
	if r.ServerAddress != nil {
		return r.ServerAddress(pod)
	}
	return podAddress(pod)
}

// servingCurrentTemplate is true for a ready pod, not being deleted, made from the current pod
// template as far as the config is concerned: its config hash is the current one, or the form an
// operator before issue #30 gave the same start-only config (a pod kept across the operator's
// upgrade, not yet relabelled).
func servingCurrentTemplate(pod *corev1.Pod, cfg *serverConfig) bool {
	h := pod.Annotations[annotationConfigHash]
	return (h == cfg.RestartHash || h == cfg.LegacyRestartHash) && podReady(pod)
}

// serverRestarts counts the server container's restarts.
func serverRestarts(pod *corev1.Pod) int32 {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerName {
			return cs.RestartCount
		}
	}
	return 0
}

// applyLive brings a server's live directives to the rendered values, and those of dropped (live
// directives an earlier config set and this one does not) to the server's defaults, which a fresh
// start from the new file would give: it reads them with CONFIG GET, sets those that differ in one
// CONFIG SET (which the server applies all or nothing), and reads them back. It returns the changes
// made, as "name old -> new".
func (r *CacheInstanceReconciler) applyLive(ctx context.Context, addr string, creds serverCreds, live [][2]string, dropped []string) ([]string, error) {
	live = slices.Clip(live)
	isDefault := map[string]bool{}
	for _, name := range dropped {
		def, ok := config.Default(name)
		if !ok {
			return nil, fmt.Errorf("%s left the config, and the server's directive table has no default for it", name)
		}
		live = append(live, [2]string{name, def})
		isDefault[name] = true
	}
	want := map[string]string{}
	names := make([]any, 0, len(live)+2)
	names = append(names, "CONFIG", "GET")
	for _, d := range live {
		v, err := config.Expected(d[0], d[1])
		if err != nil {
			return nil, fmt.Errorf("the rendered config has %w", err)
		}
		want[d[0]] = v
		names = append(names, d[0])
	}
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	read := func() (map[string]string, error) {
		pairs, err := rdb.Do(ctx, names...).StringSlice()
		if err != nil {
			return nil, fmt.Errorf("CONFIG GET: %w", err)
		}
		have := map[string]string{}
		for i := 0; i+1 < len(pairs); i += 2 {
			have[pairs[i]] = pairs[i+1]
		}
		return have, nil
	}
	have, err := read()
	if err != nil {
		return nil, err
	}
	set := []any{"CONFIG", "SET"}
	var changes []string
	for _, d := range live {
		if have[d[0]] != want[d[0]] {
			arg := configSetArg(d[1])
			if config.CanonicalName(d[0]) == "client-output-buffer-limit" {
				// A config-file line may name some classes only, and CONFIG SET changes only those
				// it names: the whole value, as CONFIG GET reads it, puts the others where a fresh
				// start from the file would (an earlier value of theirs stayed otherwise).
				arg = want[d[0]]
			}
			set = append(set, d[0], arg)
			change := fmt.Sprintf("%s %s -> %s", d[0], quoteEmpty(have[d[0]]), quoteEmpty(want[d[0]]))
			if isDefault[d[0]] {
				change += " (the default: no longer in the config)"
			}
			changes = append(changes, change)
		}
	}
	if len(changes) == 0 {
		return nil, nil
	}
	if err := rdb.Do(ctx, set...).Err(); err != nil {
		return nil, fmt.Errorf("CONFIG SET refused %s: %w", strings.Join(changes, ", "), err)
	}
	if have, err = read(); err != nil {
		return nil, err
	}
	for _, d := range live {
		if have[d[0]] != want[d[0]] {
			return nil, fmt.Errorf("after CONFIG SET %s %s the server reports %s", d[0], d[1], quoteEmpty(have[d[0]]))
		}
	}
	return changes, nil
}

// configSetArg is a config-file value as CONFIG SET takes it: one argument, unquoted (save "" is
// the empty string), and a value of several arguments as written, which the server splits.
func configSetArg(value string) string {
	if args, err := config.SplitArgs(value); err == nil && len(args) == 1 {
		return args[0]
	}
	return value
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// setConfigApplied writes what the pods run: status.image and pendingImage, status.pods,
// status.appliedConfigHash and the ConfigApplied condition.
func setConfigApplied(st *cachev1alpha1.CacheInstanceStatus, inst *instance, set func(typ string, status metav1.ConditionStatus, reason, format string, args ...any)) {
	cfg, ro := inst.config, inst.rollout
	prev := meta.FindStatusCondition(st.Conditions, cachev1alpha1.ConditionConfigApplied)
	if cfg == nil || ro == nil {
		if prev == nil {
			set(cachev1alpha1.ConditionConfigApplied, metav1.ConditionUnknown, reasonNotApplied, "No StatefulSet has been applied yet")
		}
		return
	}
	if inst.podConfigs != nil {
		st.Pods = inst.podConfigs
	}
	st.Image, st.PendingImage = inst.image, inst.pendingImage
	st.CPU = describeCPU(inst.CacheInstance, cfg)
	change := inst.change
	if change == nil && prev != nil && prev.Status != metav1.ConditionTrue && prev.Reason != reasonLiveChangeFailed {
		// A change on its way since an earlier pass: keep saying why.
		change = &configChange{rolled: prev.Reason == reasonRollingOut || prev.Reason == cachev1alpha1.RolloutWaitingForConsent, detail: prev.Message[strings.Index(prev.Message, ": ")+2:]}
	}
	inEffect := inst.liveInEffect && ro.ready()
	if inEffect {
		st.AppliedConfigHash = cfg.Hash
	}
	switch {
	case inst.liveFailure != "":
		set(cachev1alpha1.ConditionConfigApplied, metav1.ConditionFalse, reasonLiveChangeFailed, "%s", inst.blocked.message)
	case change == nil && prev != nil && prev.Status == metav1.ConditionTrue && st.AppliedConfigHash == cfg.Hash:
		// Nothing changed: the condition says how the last change came.
	case change == nil:
		change = &configChange{rolled: true, detail: "the pods started with it"}
		fallthrough
	default:
		switch {
		case inEffect && change.rolled:
			set(cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, reasonRolled, "Pods replaced for config %s: %s", cfg.Hash, change.detail)
		case inEffect:
			set(cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, reasonAppliedLive, "Config %s applied live, the pods kept their data: %s", cfg.Hash, change.detail)
		case change.rolled && inst.rolloutDecision != nil && inst.rolloutDecision.waiting():
			set(cachev1alpha1.ConditionConfigApplied, metav1.ConditionFalse, inst.rolloutDecision.reason, "Config %s needs new pods, which wait (see the Rollout condition): %s", cfg.Hash, change.detail)
		case change.rolled:
			set(cachev1alpha1.ConditionConfigApplied, metav1.ConditionFalse, reasonRollingOut, "Replacing the pods for config %s: %s", cfg.Hash, change.detail)
		default:
			set(cachev1alpha1.ConditionConfigApplied, metav1.ConditionFalse, reasonApplyingLive, "Applying config %s live: %s", cfg.Hash, change.detail)
		}
	}
}

// rollReasons says why a new pod template replaces the pods: what differs between the template the
// StatefulSet has and the one applied, and which directives that the server reads only at start
// changed between the previous rendered config and this one.
func rollReasons(prevImage, image string, prevResources, resources corev1.ResourceList, prevConfig, config string) string {
	var why []string
	if prevImage != image {
		why = append(why, fmt.Sprintf("image %s -> %s", prevImage, image))
	}
	// Measured on the local node (kubelet 1.37, static CPU manager): the kubelet refuses to resize
	// a Guaranteed pod's CPU in place ("Resize is infeasible for Guaranteed Pods alongside CPU
	// Manager policy static"), and resizes its memory in place, up and down, without a restart:
	// a change of memory alone is made in place (cacheinstance_resize.go) and never gets here.
	because := map[corev1.ResourceName]string{
		corev1.ResourceCPU:    "the kubelet's static CPU manager does not resize a Guaranteed pod's CPUs in place",
		corev1.ResourceMemory: "with another change that needs new pods",
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		a, b := prevResources[res], resources[res]
		if a.Cmp(b) != 0 {
			why = append(why, fmt.Sprintf("%s %s -> %s (%s)", res, a.String(), b.String(), because[res]))
		}
	}
	before, after := map[string]string{}, map[string]bool{}
	for _, d := range directives(prevConfig) {
		before[d[0]] = d[1]
	}
	for _, d := range directives(config) {
		after[d[0]] = true
		if old, ok := before[d[0]]; (!ok || old != d[1]) && !liveDirective(d[0]) && prevConfig != "" {
			why = append(why, fmt.Sprintf("%s %s -> %s (read at start only)", d[0], quoteEmpty(old), d[1]))
		}
	}
	for _, d := range directives(prevConfig) {
		if !after[d[0]] && !liveDirective(d[0]) {
			why = append(why, fmt.Sprintf("%s %s removed (read at start only)", d[0], d[1]))
		}
	}
	if len(why) == 0 {
		return "the pod template changed"
	}
	return "because " + strings.Join(why, ", ")
}
