package controllers

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// The user and group of the image's nonroot user (distroless): the pod runs as them so that Pod
// Security "restricted" admits it and the mounted files are readable through fsGroup.
const nonRootID = 65532

const (
	containerName   = "server"
	portNameRedis   = "redis"
	portNameMetrics = "metrics"
)

// desiredStatefulSet builds the server's StatefulSet: one container with integer CPUs and memory
// whose requests equal the limits (Guaranteed QoS, so the static CPU manager gives it whole cores and
// the relative cpulists pin threads to them), the config hash on the pod template, exec probes
// through the server binary, and a security context Pod Security "restricted" admits.
func desiredStatefulSet(ci *cachev1alpha1.CacheInstance, cfg *serverConfig, image string) (*appsv1ac.StatefulSetApplyConfiguration, error) {
	s := &ci.Spec
	resources := serverResources(ci)

	container := corev1ac.Container().
		WithName(containerName).
		WithImage(image).
		WithCommand(serverBinary, configPath).
		WithPorts(
			corev1ac.ContainerPort().WithName(portNameRedis).WithContainerPort(serverPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(portNameMetrics).WithContainerPort(s.Metrics.Port).WithProtocol(corev1.ProtocolTCP),
		).
		WithResources(corev1ac.ResourceRequirements().WithRequests(resources).WithLimits(resources)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("config").WithMountPath(configDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("data").WithMountPath(dataDir),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
		).
		// Readiness decides when the Service sends clients; liveness restarts a server that stopped
		// answering, with more patience so a busy server is not killed for being slow once.
		WithReadinessProbe(execProbe(ci, 5, 3)).
		WithLivenessProbe(execProbe(ci, 10, 6).WithInitialDelaySeconds(10)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsNonRoot(true).
			WithReadOnlyRootFilesystem(true).
			WithAllowPrivilegeEscalation(false).
			WithCapabilities(corev1ac.Capabilities().WithDrop(corev1.Capability("ALL"))))
	if s.ImagePullPolicy != "" {
		container.WithImagePullPolicy(s.ImagePullPolicy)
	}

	persistent := s.Persistence.Mode.Persistent()
	if persistent {
		// Loading a snapshot comes before the server listens: the startup probe gives it time, so
		// that liveness does not kill a server that is reading its data back.
		container.WithStartupProbe(execProbe(ci, 5, loadProbeFailures(ci)))
	}
	if replicated(ci) {
		// A replicated pod being deleted (a drain, an eviction, a rollout) holds its SIGTERM while it
		// is a primary with replicas, until the operator has moved the primary away
		// (cacheinstance_replication.go switchAwayFrom); the grace period covers that wait too.
		container.WithLifecycle(corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().
			WithExec(corev1ac.ExecAction().WithCommand(preStopCommand(ci)...))))
	}
	pod := corev1ac.PodSpec().
		WithContainers(container).
		WithVolumes(podVolumes(ci, persistent)...).
		WithVolumes(bootstrapVolumes(ci)...).
		// The server never talks to the API server, and service links would only flood its
		// environment.
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(nonRootID).
			WithRunAsGroup(nonRootID).
			WithFSGroup(nonRootID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
	switch {
	case persistent && replicated(ci):
		pod.WithTerminationGracePeriodSeconds(preStopWaitSeconds + shutdownGraceSeconds(ci))
	case persistent:
		// The server saves a snapshot on SIGTERM: the kubelet must wait for it before it kills.
		pod.WithTerminationGracePeriodSeconds(shutdownGraceSeconds(ci))
	case replicated(ci):
		pod.WithTerminationGracePeriodSeconds(preStopWaitSeconds + minShutdownGrace)
	}
	if restore := bootstrapInitContainer(ci, image); restore != nil {
		pod.WithInitContainers(restore)
		if sa := s.Bootstrap.Backup.Storage.ServiceAccountName; sa != "" {
			pod.WithServiceAccountName(sa)
		}
	}
	if len(s.NodeSelector) > 0 {
		pod.WithNodeSelector(s.NodeSelector)
	}
	for _, ps := range s.ImagePullSecrets {
		pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(ps.Name))
	}
	for i := range s.TopologySpreadConstraints {
		tsc := s.TopologySpreadConstraints[i].DeepCopy()
		if tsc.LabelSelector == nil {
			tsc.LabelSelector = &metav1.LabelSelector{MatchLabels: selectorLabels(ci)}
		}
		c, err := convertJSON[corev1ac.TopologySpreadConstraintApplyConfiguration](tsc)
		if err != nil {
			return nil, fmt.Errorf("converting spec.topologySpreadConstraints: %w", err)
		}
		pod.WithTopologySpreadConstraints(c)
	}
	if s.PriorityClassName != "" {
		pod.WithPriorityClassName(s.PriorityClassName)
	}
	if s.Affinity != nil {
		a, err := convertJSON[corev1ac.AffinityApplyConfiguration](s.Affinity)
		if err != nil {
			return nil, fmt.Errorf("converting spec.affinity: %w", err)
		}
		pod.WithAffinity(a)
	}
	for i := range s.Tolerations {
		t, err := convertJSON[corev1ac.TolerationApplyConfiguration](&s.Tolerations[i])
		if err != nil {
			return nil, fmt.Errorf("converting spec.tolerations: %w", err)
		}
		pod.WithTolerations(t)
	}

	// The operator's labels and annotation are applied last: user values cannot unselect the pod or
	// hide a config change.
	podLabels := maps.Clone(s.PodLabels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, objectLabels(ci))
	podAnnotations := maps.Clone(s.PodAnnotations)
	if podAnnotations == nil {
		podAnnotations = map[string]string{}
	}
	// Only what the server cannot change live: the rest is applied to the running pods.
	podAnnotations[annotationConfigHash] = cfg.RestartHash

	spec := appsv1ac.StatefulSetSpec()
	if persistent {
		spec.WithVolumeClaimTemplates(dataClaimTemplate(ci)).
			WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
				WithWhenDeleted(claimRetention(s.Persistence.WhenDeleted)).
				WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))
	}
	return appsv1ac.StatefulSet(ci.Name, ci.Namespace).
		WithLabels(objectLabels(ci)).
		WithOwnerReferences(ownerReference(ci)).
		WithSpec(spec.
			WithReplicas(statefulSetReplicas(ci)).
			WithServiceName(headlessName(ci)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(ci))).
			// Server pods are independent caches: none waits for another to start or stop.
			WithPodManagementPolicy(appsv1.ParallelPodManagement).
			WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(updateStrategy(ci))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(podLabels).
				WithAnnotations(podAnnotations).
				WithSpec(pod))), nil
}

// updateStrategy is OnDelete: the operator, not the StatefulSet controller, brings pods to a new
// template (cacheinstance_replica_rollout.go), because only it knows which pod is the primary and
// which changes the kubelet can make in place without emptying the cache
// (cacheinstance_resize.go). Changing a StatefulSet from RollingUpdate to OnDelete touches no pod.
func updateStrategy(*cachev1alpha1.CacheInstance) appsv1.StatefulSetUpdateStrategyType {
	return appsv1.OnDeleteStatefulSetStrategyType
}

// podVolumes are the pod's volumes: the config, /data (an emptyDir unless it comes from the
// persistence claim template) and /tmp. Their order is part of the pod template: changing it would
// roll every instance when the operator is upgraded.
func podVolumes(ci *cachev1alpha1.CacheInstance, persistent bool) []*corev1ac.VolumeApplyConfiguration {
	vols := []*corev1ac.VolumeApplyConfiguration{configVolume(ci)}
	if !persistent {
		vols = append(vols, corev1ac.Volume().WithName("data").WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	return append(vols, corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
}

// serverImage chooses the image the pods run: spec.image; else the operator's own under
// upgradePolicy Rolling, or for a new instance; else, under Manual, the image the instance runs
// (status.image, or the StatefulSet's for an instance from before status.image), and then pending
// is the operator's image when it differs.
func serverImage(ci *cachev1alpha1.CacheInstance, operatorImage, running string) (image, pending string) {
	if ci.Spec.Image != "" {
		return ci.Spec.Image, ""
	}
	if ci.Spec.UpgradePolicy == cachev1alpha1.UpgradeRolling {
		return operatorImage, ""
	}
	pinned := ci.Status.Image
	if pinned == "" {
		pinned = running
	}
	if pinned == "" || pinned == operatorImage {
		return operatorImage, ""
	}
	return pinned, operatorImage
}

// serverResources are the server container's requests and limits: equal, so the pod is Guaranteed.
// Under cpuMode Shared the CPU is a fraction, which the static CPU manager serves from the shared
// pool.
func serverResources(ci *cachev1alpha1.CacheInstance) corev1.ResourceList {
	cpu := *resource.NewQuantity(int64(ci.Spec.Cores), resource.DecimalSI)
	if ci.Spec.CPUMode == cachev1alpha1.CPUShared && ci.Spec.CPU != nil {
		cpu = *ci.Spec.CPU
	}
	return corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: ci.Spec.Memory}
}

// describeCPU is status.cpu: how the instance uses CPUs, in words.
func describeCPU(ci *cachev1alpha1.CacheInstance, cfg *serverConfig) string {
	if ci.Spec.CPUMode == cachev1alpha1.CPUShared && ci.Spec.CPU != nil {
		return fmt.Sprintf("Shared: %s of a core from the node's shared pool, not exclusive; io-threads 1, threads not pinned", ci.Spec.CPU)
	}
	return fmt.Sprintf("Exclusive: %d whole cores (Guaranteed QoS, exclusive with the static CPU manager); io-threads %d, server threads pinned to %s",
		ci.Spec.Cores, cfg.IOThreads, cfg.CPULists.Server)
}

// preStopWaitSeconds bounds how long a replicated pod's preStop hook waits for the primary to move.
const preStopWaitSeconds = 20

// preStopCommand is the server binary's own preStop hook (iocache-server --pre-stop): it returns
// once the server is not a primary with replicas, or after preStopWaitSeconds.
func preStopCommand(ci *cachev1alpha1.CacheInstance) []string {
	cmd := []string{serverBinary, "--pre-stop", "--port", strconv.Itoa(serverPort), "--wait", strconv.Itoa(preStopWaitSeconds) + "s"}
	if ci.Spec.Auth != nil {
		cmd = append(cmd, "--password-file", authFilePath(ci.Spec.Auth))
	}
	return append(cmd, localTLSArgs(ci)...)
}

// localTLSArgs are the probe's and the preStop hook's TLS flags: the server's chain is checked
// against the mounted CA, and with authClients Required the server's own certificate is presented.
func localTLSArgs(ci *cachev1alpha1.CacheInstance) []string {
	t := ci.Spec.TLS
	if t == nil {
		return nil
	}
	args := []string{"--tls", "--cacert", tlsCAPath}
	if t.AuthClients == cachev1alpha1.TLSAuthClientsRequired {
		args = append(args, "--cert", tlsCertPath, "--key", tlsKeyPath)
	}
	return args
}

// execProbe runs the server binary's own health check, which sends PING (after AUTH with the
// password file, so the password is on no command line) and exits 0 on PONG. Its own timeout is 2s.
func execProbe(ci *cachev1alpha1.CacheInstance, period, failures int32) *corev1ac.ProbeApplyConfiguration {
	cmd := []string{serverBinary, "--check-health", "--port", strconv.Itoa(serverPort)}
	if ci.Spec.Auth != nil {
		cmd = append(cmd, "--password-file", authFilePath(ci.Spec.Auth))
	}
	cmd = append(cmd, localTLSArgs(ci)...)
	return corev1ac.Probe().
		WithExec(corev1ac.ExecAction().WithCommand(cmd...)).
		WithPeriodSeconds(period).
		WithTimeoutSeconds(3).
		WithSuccessThreshold(1).
		WithFailureThreshold(failures)
}

// configVolume projects the rendered config, with auth the password key (and with spec.users the
// users file) and with tls the certificate, key and CA into one directory: iocache.conf,
// auth/<key>, users/users.acl, tls/{tls.crt,tls.key,ca.crt}. One volume avoids mounting a Secret
// inside the read-only ConfigMap mount. Files are readable by the fsGroup only.
func configVolume(ci *cachev1alpha1.CacheInstance) *corev1ac.VolumeApplyConfiguration {
	sources := []*corev1ac.VolumeProjectionApplyConfiguration{
		corev1ac.VolumeProjection().WithConfigMap(corev1ac.ConfigMapProjection().
			WithName(configMapName(ci)).
			WithItems(corev1ac.KeyToPath().WithKey(configFileName).WithPath(configFileName))),
	}
	if a := ci.Spec.Auth; a != nil {
		sources = append(sources, corev1ac.VolumeProjection().WithSecret(corev1ac.SecretProjection().
			WithName(a.ExistingSecret).
			WithItems(corev1ac.KeyToPath().WithKey(a.Key).WithPath(authSubdir+"/"+a.Key))))
		if len(ci.Spec.Users) > 0 {
			sources = append(sources, corev1ac.VolumeProjection().WithSecret(corev1ac.SecretProjection().
				WithName(usersSecretName(ci)).
				WithItems(corev1ac.KeyToPath().WithKey(usersFileName).WithPath(usersSubdir+"/"+usersFileName))))
		}
	}
	if ci.Spec.TLS != nil {
		// A projected Secret (no subPath) is updated in place when the Secret changes, so a
		// renewed certificate reaches the running pods.
		sources = append(sources, corev1ac.VolumeProjection().WithSecret(corev1ac.SecretProjection().
			WithName(ci.TLSSecretName()).
			WithItems(
				corev1ac.KeyToPath().WithKey(tlsCertKey).WithPath(tlsSubdir+"/"+tlsCertKey),
				corev1ac.KeyToPath().WithKey(tlsKeyKey).WithPath(tlsSubdir+"/"+tlsKeyKey),
				corev1ac.KeyToPath().WithKey(tlsCAKey).WithPath(tlsSubdir+"/"+tlsCAKey))))
	}
	return corev1ac.Volume().WithName("config").WithProjected(corev1ac.ProjectedVolumeSource().
		WithDefaultMode(0o440).
		WithSources(sources...))
}

// rollout is the part of a StatefulSet's status that says whether its pods run the current
// template.
type rollout struct {
	generation, observedGeneration              int64
	replicas, readyReplicas, updatedReplicas    int32
	statusReplicas                              int32 // pods that exist
	currentRevision, updateRevision, configHash string
	// onDelete: the StatefulSet controller never moves currentRevision, the operator replaces pods.
	onDelete bool
}

// rolloutOf reads an applied StatefulSet as the API server returned it.
func rolloutOf(sts *appsv1ac.StatefulSetApplyConfiguration) rollout {
	r := rollout{generation: ptr.Deref(sts.Generation, 0)}
	if sts.Spec != nil {
		r.replicas = ptr.Deref(sts.Spec.Replicas, 1)
		if us := sts.Spec.UpdateStrategy; us != nil {
			r.onDelete = ptr.Deref(us.Type, "") == appsv1.OnDeleteStatefulSetStrategyType
		}
		if sts.Spec.Template != nil {
			r.configHash = sts.Spec.Template.Annotations[annotationConfigHash]
		}
	}
	if st := sts.Status; st != nil {
		r.observedGeneration = ptr.Deref(st.ObservedGeneration, 0)
		r.readyReplicas = ptr.Deref(st.ReadyReplicas, 0)
		r.statusReplicas = ptr.Deref(st.Replicas, 0)
		r.updatedReplicas = ptr.Deref(st.UpdatedReplicas, 0)
		r.currentRevision = ptr.Deref(st.CurrentRevision, "")
		r.updateRevision = ptr.Deref(st.UpdateRevision, "")
	}
	return r
}

// current is true once the StatefulSet controller has seen the latest template and every pod runs
// it.
func (r rollout) current() bool {
	return r.observedGeneration >= r.generation && r.updatedReplicas >= r.replicas &&
		r.updateRevision != "" && (r.onDelete || r.currentRevision == r.updateRevision)
}

// ready is true when every pod runs the current template and is ready.
func (r rollout) ready() bool { return r.current() && r.readyReplicas >= r.replicas }

// readyCurrent counts the ready pods known to run the current template.
func (r rollout) readyCurrent() int32 {
	if r.observedGeneration < r.generation {
		return 0
	}
	return min(r.readyReplicas, r.updatedReplicas)
}

// reconcileStatefulSet applies the StatefulSet and records its rollout for the status. When the
// new pod template replaces the pods, it says why.
func (r *CacheInstanceReconciler) reconcileStatefulSet(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	var prev appsv1.StatefulSet
	err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: inst.Name}, &prev)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading StatefulSet: %w", err)
	}
	if exists {
		if res, err := r.recreateForClaims(ctx, inst, &prev); res != nil || err != nil {
			return res, err
		}
	}
	running := ""
	if exists && len(prev.Spec.Template.Spec.Containers) > 0 {
		running = prev.Spec.Template.Spec.Containers[0].Image
	}
	image, pending := serverImage(inst.CacheInstance, r.Image, running)
	inst.image, inst.pendingImage = image, pending
	if pending != "" && pending != inst.Status.PendingImage {
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, "UpgradeAvailable", "PinImage",
			"The operator runs %s; this instance keeps %s (upgradePolicy Manual): set upgradePolicy: Rolling or spec.image to move, which replaces the pods", pending, image)
	}
	// A StatefulSet's claim template cannot change: a grown persistence.size keeps the size the
	// StatefulSet was made with there, and the volumes step expands the claims themselves.
	rendered := inst.CacheInstance
	if size := claimTemplateSize(&prev); exists && size != nil && rendered.Spec.Persistence.Size != nil {
		inst.claimTemplateSize = size
		if size.Cmp(*rendered.Spec.Persistence.Size) != 0 {
			rendered = rendered.DeepCopy()
			rendered.Spec.Persistence.Size = size
		}
	}
	sts, err := desiredStatefulSet(rendered, inst.config, image)
	if err != nil {
		return nil, fmt.Errorf("building StatefulSet: %w", err)
	}
	if err := r.Apply(ctx, sts, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("applying StatefulSet: %w", err)
	}
	ro := rolloutOf(sts)
	inst.rollout = &ro
	if exists && ptr.Deref(sts.Generation, 0) > prev.Generation && len(prev.Spec.Template.Spec.Containers) > 0 {
		old := prev.Spec.Template.Spec.Containers[0]
		if from, to, ok := inPlaceTemplateChange(&prev.Spec.Template, sts.Spec.Template, inst.config); ok {
			if from.Cmp(to) == 0 {
				// Only the hash's form: the config the pods run is the current one, which the
				// status keeps saying; the rollout step relabels them.
				r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, reasonRestartHashUpdated, "RelabelPods",
					"The pod template's config hash %s -> %s: the same start-only config, hashed as this operator does (live spec.config directives no longer count); the pods are kept, with their data",
					inst.config.LegacyRestartHash, inst.config.RestartHash)
				return nil, nil
			}
			inst.change = &configChange{detail: fmt.Sprintf("memory %s -> %s, the pods resized in place (cacheinstance_resize.go)", from.String(), to.String())}
			r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, reasonResizingInPlace, "ResizePod",
				"Memory %s -> %s: resizing the pods in place, they keep their data", from.String(), to.String())
			return nil, nil
		}
		why := rollReasons(old.Image, image, old.Resources.Limits, serverResources(inst.CacheInstance), inst.previousConfig, inst.config.Text)
		inst.change = &configChange{rolled: true, detail: why}
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, reasonRolled, "RollPods",
			"New pod template for config %s (io-threads %d, server cpulist %s) %s; the Rollout condition says how the pods get it, before any is replaced",
			inst.config.Hash, inst.config.IOThreads, inst.config.CPULists.Server, why)
	}
	return nil, nil
}
