package controllers

import (
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/backup"
)

// A backup is a Job that runs the server binary's backup subcommand (server/backup) against the
// instance's replicas Service (or its client Service): the snapshot streams from the server
// through zstd to the storage, so the pod needs no volume for the data and little memory. The
// storage's credentials reach the container as environment from the user's Secret; the operator
// never reads them.

// What backup Jobs and restore init containers run and where they find their files.
const (
	backupContainerName = "backup"
	backupAuthDir       = "/etc/iocache-backup/auth"
	backupCADir         = "/etc/iocache-backup/storage-ca"
	backupTLSDir        = "/etc/iocache-backup/tls"
	backupCAKey         = "ca.crt"
	backupAppName       = "iocache-backup"
)

// Job settings. Each attempt is a pod; the Job controller spaces the retries out exponentially
// (10s, 20s, 40s, ...), which rides out a storage that is down for a minute or a replica that
// restarts. Finished Jobs stay a day, then go with their pods; the CacheBackup keeps the result.
const (
	backupBackoffLimit   int32 = 4
	backupDeadline             = int64(6 * 3600)
	backupTTLAfterFinish int32 = 24 * 3600
)

// backupSecretName is the Secret with the backup user's password.
func backupSecretName(ci *cachev1alpha1.CacheInstance) string { return ci.Name + "-backup" }

// backupLabels go on a backup's Job and pods; the network policy lets them in.
func backupLabels(ci *cachev1alpha1.CacheInstance) map[string]string {
	return map[string]string{
		labelName:      backupAppName,
		labelInstance:  ci.Name,
		LabelManagedBy: ManagedBy,
		labelComponent: "backup",
	}
}

// backupPrefix is the folder of the instance's backups: spec's, or <namespace>/<instance>.
func backupPrefix(s *cachev1alpha1.BackupStorage, ci *cachev1alpha1.CacheInstance) string {
	if s.Prefix != "" {
		return strings.Trim(s.Prefix, "/")
	}
	return ci.Namespace + "/" + ci.Name
}

// storageArgs are the flags that name the storage, for backup and restore alike.
func storageArgs(s *cachev1alpha1.BackupStorage, prefix string) []string {
	args := []string{"--endpoint", strings.TrimSuffix(s.Endpoint, "/"), "--bucket", s.Bucket, "--prefix", prefix}
	if s.Region != "" {
		args = append(args, "--region", s.Region)
	}
	if s.PathStyle {
		args = append(args, "--path-style")
	}
	if s.CA != nil {
		args = append(args, "--ca-file", backupCADir+"/"+backupCAKey)
	}
	if e := s.Encryption; e != nil {
		args = append(args, "--sse", e.Type)
		if e.KMSKeyID != "" {
			args = append(args, "--sse-kms-key-id", e.KMSKeyID)
		}
	}
	return args
}

// storageEnv passes the credentials Secret's keys as environment, by reference: they appear in
// no pod spec, log or status.
func storageEnv(s *cachev1alpha1.BackupStorage) []corev1.EnvVar {
	if s.CredentialsSecret == "" {
		return nil
	}
	ref := func(key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.CredentialsSecret}, Key: key, Optional: ptr.To(optional),
		}}}
	}
	return []corev1.EnvVar{ref("AWS_ACCESS_KEY_ID", false), ref("AWS_SECRET_ACCESS_KEY", false), ref("AWS_SESSION_TOKEN", true)}
}

// storageVolumes is the CA bundle's volume and mount, with storage.ca.
func storageVolumes(s *cachev1alpha1.BackupStorage, volume string) ([]corev1.Volume, []corev1.VolumeMount) {
	if s.CA == nil {
		return nil, nil
	}
	return []corev1.Volume{{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  s.CA.Name,
			Items:       []corev1.KeyToPath{{Key: s.CA.Key, Path: backupCAKey}},
			DefaultMode: ptr.To[int32](0o444),
		}}}},
		[]corev1.VolumeMount{{Name: volume, MountPath: backupCADir, ReadOnly: true}}
}

// backupSource is the address the snapshot is read from: the replicas Service when the target
// prefers a replica and the instance has replicas (a retry after a replica left picks another),
// else the client Service, which sends to the primary.
func backupSource(ci *cachev1alpha1.CacheInstance, target cachev1alpha1.BackupTarget) string {
	svc := ci.Name
	if target != cachev1alpha1.BackupPrimary && replicated(ci) {
		svc = replicasServiceName(ci)
	}
	return svc + "." + ci.Namespace + ".svc:" + strconv.Itoa(serverPort)
}

// backupResources is spec.backup.resources or the default: little CPU and memory requested (a
// backup is background work), room to compress at speed.
func backupResources(spec *cachev1alpha1.BackupSpec) corev1.ResourceRequirements {
	if spec.Resources != nil {
		return *spec.Resources.DeepCopy()
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

// restrictedContainer is the security context Pod Security "restricted" admits.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// backupArgs is the backup subcommand's command line. The retention flags go with every run, so
// retention is applied after each success and only then.
func backupArgs(cbk *cachev1alpha1.CacheBackup, ci *cachev1alpha1.CacheInstance, configHash string) []string {
	spec := ci.Spec.Backup
	source := backupSource(ci, cbk.Spec.Target)
	args := []string{serverBinary, "backup",
		"--source", source,
		"--user", backup.UserName,
		"--password-file", backupAuthDir + "/" + benchSecretKey,
		"--name", cbk.Name,
		"--label", "namespace=" + ci.Namespace,
		"--label", "instance=" + ci.Name,
		"--label", "cachebackup=" + cbk.Name,
		"--json-out", terminationLogPath,
	}
	if configHash != "" {
		args = append(args, "--label", "configHash="+configHash)
	}
	if r := spec.Retention; r.Keep > 0 || r.MaxAge != nil {
		if r.Keep > 0 {
			args = append(args, "--keep", strconv.Itoa(int(r.Keep)))
		}
		if r.MaxAge != nil {
			args = append(args, "--max-age", r.MaxAge.Duration.String())
		}
	}
	if t := ci.Spec.TLS; t != nil {
		host, _, _ := strings.Cut(source, ":")
		args = append(args, "--tls", "--tls-ca-cert-file", backupTLSDir+"/"+tlsCAKey, "--tls-server-name", host)
		if t.AuthClients == cachev1alpha1.TLSAuthClientsRequired {
			args = append(args, "--tls-cert-file", backupTLSDir+"/"+tlsCertKey, "--tls-key-file", backupTLSDir+"/"+tlsKeyKey)
		}
	}
	return append(args, storageArgs(&spec.Storage, backupPrefix(&spec.Storage, ci))...)
}

// desiredBackupJob is the Job of one CacheBackup, from a defaulted instance with spec.backup.
func desiredBackupJob(cbk *cachev1alpha1.CacheBackup, ci *cachev1alpha1.CacheInstance, configHash, image string) *batchv1.Job {
	spec := ci.Spec.Backup
	container := corev1.Container{
		Name:                     backupContainerName,
		Image:                    image,
		ImagePullPolicy:          ci.Spec.ImagePullPolicy,
		Command:                  backupArgs(cbk, ci, configHash),
		Env:                      storageEnv(&spec.Storage),
		Resources:                backupResources(spec),
		TerminationMessagePath:   terminationLogPath,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restrictedContainer(),
		VolumeMounts:             []corev1.VolumeMount{{Name: "auth", MountPath: backupAuthDir, ReadOnly: true}},
	}
	pod := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		ServiceAccountName:           spec.Storage.ServiceAccountName,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](nonRootID),
			RunAsGroup:     ptr.To[int64](nonRootID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		NodeSelector:     ci.Spec.NodeSelector,
		Tolerations:      ci.Spec.Tolerations,
		ImagePullSecrets: append([]corev1.LocalObjectReference(nil), ci.Spec.ImagePullSecrets...),
		// The backup user's password, never the instance's.
		Volumes: []corev1.Volume{{Name: "auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  backupSecretName(ci),
			Items:       []corev1.KeyToPath{{Key: benchSecretKey, Path: benchSecretKey}},
			DefaultMode: ptr.To[int32](0o440),
		}}}},
	}
	if spec.Storage.ServiceAccountName != "" {
		// Workload identity needs the account's token (EKS and GKE mount their own; others read
		// the service account token).
		pod.AutomountServiceAccountToken = nil
	}
	vols, mounts := storageVolumes(&spec.Storage, "storage-ca")
	pod.Volumes = append(pod.Volumes, vols...)
	container.VolumeMounts = append(container.VolumeMounts, mounts...)
	if t := ci.Spec.TLS; t != nil {
		items := []corev1.KeyToPath{{Key: tlsCAKey, Path: tlsCAKey}}
		if t.AuthClients == cachev1alpha1.TLSAuthClientsRequired {
			items = append(items, corev1.KeyToPath{Key: tlsCertKey, Path: tlsCertKey}, corev1.KeyToPath{Key: tlsKeyKey, Path: tlsKeyKey})
		}
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: backupTLSDir, ReadOnly: true})
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: benchTLSSecretName(ci), Items: items, DefaultMode: ptr.To[int32](0o440),
		}}})
	}
	pod.Containers = []corev1.Container{container}
	labels := backupLabels(ci)
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            backupJobName(cbk),
			Namespace:       cbk.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cbk, cachev1alpha1.GroupVersion.WithKind("CacheBackup"))},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(backupBackoffLimit),
			ActiveDeadlineSeconds:   ptr.To(backupDeadline),
			TTLSecondsAfterFinished: ptr.To(backupTTLAfterFinish),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod,
			},
		},
	}
}

// backupJobName is the CacheBackup's name, cut to fit a label value and made unique again with a
// hash of the whole name when it is too long.
func backupJobName(cbk *cachev1alpha1.CacheBackup) string {
	return boundedName(cbk.Name, "")
}
