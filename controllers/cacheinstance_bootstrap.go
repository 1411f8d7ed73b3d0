package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Bootstrap from a backup: with spec.bootstrap.backup every server pod has an init container
// that runs the server binary's restore subcommand (server/backup) before the server starts. It
// restores only while the ConfigMap <instance>-bootstrap exists (mounted as an optional volume,
// so the pod template never changes) and never over data the volume already holds. The operator
// creates the ConfigMap with the instance and deletes it once a pod serves the restored data:
// from then on a replaced pod comes back as any pod does, from its volume or from its primary,
// never from an older backup. Every pod of a new instance restores (so whichever becomes the
// primary holds the data; the others then sync from it), and a pod is ready only once its
// server loaded the file. A backup that fails its checks stops the init container with the
// reason, which status.bootstrap quotes; nothing is served.

// What the restore init container is called and where it finds the pending file.
const (
	restoreContainerName = "restore"
	bootstrapDir         = "/etc/iocache-bootstrap"
	bootstrapPendingKey  = "pending"
)

// Event reasons of a bootstrap.
const (
	reasonBootstrapRestored = "BackupRestored"
	reasonBootstrapFailed   = "RestoreFailed"
)

// bootstrapConfigMapName is the ConfigMap whose presence makes the pods restore.
func bootstrapConfigMapName(ci *cachev1alpha1.CacheInstance) string { return ci.Name + "-bootstrap" }

// restoreTarget is the file the server loads at start: dir/dbfilename.
func restoreTarget(ci *cachev1alpha1.CacheInstance) string {
	name := "dump.rdb"
	for k, v := range ci.Spec.Config {
		if strings.EqualFold(k, "dbfilename") && v != "" {
			name = string(v)
		}
	}
	return dataDir + "/" + name
}

// bootstrapInitContainer is the restore init container of a pod of an instance with
// spec.bootstrap.backup, or nil. It gets the server's resources, so the pod stays Guaranteed.
func bootstrapInitContainer(ci *cachev1alpha1.CacheInstance, image string) *corev1ac.ContainerApplyConfiguration {
	b := ci.Spec.Bootstrap
	if b == nil || b.Backup == nil {
		return nil
	}
	s := &b.Backup.Storage
	args := []string{serverBinary, "restore", "--name", b.Backup.Name, "--to", restoreTarget(ci),
		"--pending-file", bootstrapDir + "/" + bootstrapPendingKey, "--keep-existing", "--json-out", terminationLogPath}
	args = append(args, storageArgs(s, backupPrefix(s, ci))...)
	resources := serverResources(ci)
	c := corev1ac.Container().
		WithName(restoreContainerName).
		WithImage(image).
		WithCommand(args...).
		WithResources(corev1ac.ResourceRequirements().WithRequests(resources).WithLimits(resources)).
		WithTerminationMessagePath(terminationLogPath).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("data").WithMountPath(dataDir),
			corev1ac.VolumeMount().WithName("bootstrap").WithMountPath(bootstrapDir).WithReadOnly(true),
		).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsNonRoot(true).
			WithReadOnlyRootFilesystem(true).
			WithAllowPrivilegeEscalation(false).
			WithCapabilities(corev1ac.Capabilities().WithDrop(corev1.Capability("ALL"))))
	for _, e := range storageEnv(s) {
		c.WithEnv(corev1ac.EnvVar().WithName(e.Name).WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(
			corev1ac.SecretKeySelector().WithName(e.ValueFrom.SecretKeyRef.Name).WithKey(e.ValueFrom.SecretKeyRef.Key).
				WithOptional(*e.ValueFrom.SecretKeyRef.Optional))))
	}
	if s.CA != nil {
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName("storage-ca").WithMountPath(backupCADir).WithReadOnly(true))
	}
	if ci.Spec.ImagePullPolicy != "" {
		c.WithImagePullPolicy(ci.Spec.ImagePullPolicy)
	}
	return c
}

// bootstrapVolumes are the init container's volumes: the pending file's ConfigMap, optional so
// that pods start once it is gone, and the storage's CA.
func bootstrapVolumes(ci *cachev1alpha1.CacheInstance) []*corev1ac.VolumeApplyConfiguration {
	b := ci.Spec.Bootstrap
	if b == nil || b.Backup == nil {
		return nil
	}
	vols := []*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName("bootstrap").WithConfigMap(
		corev1ac.ConfigMapVolumeSource().WithName(bootstrapConfigMapName(ci)).WithOptional(true).WithDefaultMode(0o444))}
	if ca := b.Backup.Storage.CA; ca != nil {
		vols = append(vols, corev1ac.Volume().WithName("storage-ca").WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(ca.Name).WithItems(corev1ac.KeyToPath().WithKey(ca.Key).WithPath(backupCAKey)).WithDefaultMode(0o444)))
	}
	return vols
}

// reconcileBootstrap keeps the pending ConfigMap while the instance bootstraps, follows the
// restore in the pods' init containers, and ends the bootstrap once a pod serves the data.
func (r *CacheInstanceReconciler) reconcileBootstrap(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	b := inst.Spec.Bootstrap
	if b == nil || b.Backup == nil {
		return nil, nil
	}
	st := &cachev1alpha1.BootstrapStatus{Backup: b.Backup.Name, Phase: cachev1alpha1.BootstrapRestoring,
		Message: fmt.Sprintf("the pods restore backup %s from %s/%s", b.Backup.Name, b.Backup.Storage.Endpoint, b.Backup.Storage.Bucket)}
	if inst.Status.Bootstrap != nil {
		st = inst.Status.Bootstrap.DeepCopy()
	}
	inst.bootstrap = st
	key := client.ObjectKey{Namespace: inst.Namespace, Name: bootstrapConfigMapName(inst.CacheInstance)}
	var cm corev1.ConfigMap
	err := r.Get(ctx, key, &cm)
	if st.Phase == cachev1alpha1.BootstrapRestored {
		// The cache says whether it is still there: no DELETE on every pass of a restored instance.
		if err == nil {
			if err := r.Delete(ctx, &cm); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("deleting ConfigMap %s: %w", key.Name, err)
			}
		}
		return nil, nil
	}
	switch {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: objectLabels(inst.CacheInstance),
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(inst.CacheInstance, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))}},
			Data: map[string]string{bootstrapPendingKey: b.Backup.Name},
		}
		if err := r.Create(ctx, &cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating ConfigMap %s: %w", key.Name, err)
		}
	case err != nil:
		return nil, fmt.Errorf("reading ConfigMap %s: %w", key.Name, err)
	}

	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(inst.Namespace), client.MatchingLabels(selectorLabels(inst.CacheInstance))); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	before := st.Phase
	for i := range pods.Items {
		pod := &pods.Items[i]
		for _, cs := range pod.Status.InitContainerStatuses {
			if cs.Name != restoreContainerName {
				continue
			}
			done, last := cs.State.Terminated, cs.LastTerminationState.Terminated
			switch {
			case done != nil && done.ExitCode == 0 && podReady(pod):
				st.Phase = cachev1alpha1.BootstrapRestored
				st.Message = fmt.Sprintf("pod %s serves backup %s: %s", pod.Name, b.Backup.Name, restoredSummary(done.Message))
				st.CompletionTime = &metav1.Time{Time: pod.CreationTimestamp.Time}
				if t := readyCondition(pod); t != nil {
					st.CompletionTime = t
				}
			case st.Phase != cachev1alpha1.BootstrapRestored && last != nil && last.ExitCode != 0:
				st.Phase = cachev1alpha1.BootstrapFailed
				st.Message = fmt.Sprintf("pod %s could not restore backup %s: %s", pod.Name, b.Backup.Name, lastLine(last.Message))
			case st.Phase != cachev1alpha1.BootstrapRestored && done != nil && done.ExitCode != 0:
				st.Phase = cachev1alpha1.BootstrapFailed
				st.Message = fmt.Sprintf("pod %s could not restore backup %s: %s", pod.Name, b.Backup.Name, lastLine(done.Message))
			}
		}
		if st.Phase == cachev1alpha1.BootstrapRestored {
			break
		}
	}
	if st.Phase != before {
		switch st.Phase {
		case cachev1alpha1.BootstrapRestored:
			r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, reasonBootstrapRestored, "Bootstrap", "%s", eventNote(st.Message))
		case cachev1alpha1.BootstrapFailed:
			r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, reasonBootstrapFailed, "Bootstrap", "%s", eventNote(st.Message))
		}
	}
	return nil, nil
}

// restoredSummary is what the restore reported on success (its manifest), in words.
func restoredSummary(message string) string {
	m, err := parseManifest(message)
	if err != nil {
		return "restored"
	}
	return fmt.Sprintf("%d keys, %s of RDB, sha256 %s, taken %s from %s %s", m.Keys, humanBytes(m.RDBSize), m.SHA256,
		m.Started.UTC().Format("2006-01-02T15:04:05Z"), m.Server, m.ServerVersion)
}

// readyCondition is when the pod became ready, or nil when it is not.
func readyCondition(pod *corev1.Pod) *metav1.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return &c.LastTransitionTime
		}
	}
	return nil
}
