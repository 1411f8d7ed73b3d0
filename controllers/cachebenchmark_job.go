package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/bench"
)

// What a benchmark Job runs and where it finds its files.
const (
	benchBinary        = "/usr/local/bin/iocache-bench"
	benchContainerName = "bench"
	benchAuthDir       = "/etc/iocache-bench/auth"
	// benchTLSDir holds the instance's TLS Secret (ca.crt, and tls.crt and tls.key for authClients
	// Required) when it has spec.tls.
	benchTLSDir = "/etc/iocache-bench/tls"
	// benchTest is the one test a Job runs: SET and GET at the workload's ratio, as a cache sees them.
	benchTest = "mixed"
	// terminationLogPath is where the kubelet reads the container's termination message; iocache-bench
	// writes its compact result there (at most 4096 bytes, the kubelet's limit).
	terminationLogPath = "/dev/termination-log"

	// benchAppName tells benchmark pods from server pods: they share the instance label, so the
	// server's Services, PDB and StatefulSet, which select on name and instance, never pick them.
	benchAppName = "iocache-bench"

	// annotationIOThreads on a Job says which io-threads setting it measures.
	annotationIOThreads = "cache.iocache.dev/io-threads"
)

// Job settings. One retry rides out a pod lost to a node; more would hide a benchmark that keeps
// failing. The deadline covers every attempt of warmup plus duration, plus time to connect, read
// INFO and write the result, plus a margin for scheduling and pulling the image. Finished Jobs stay
// an hour, long enough to read their logs, then go with their pods.
const (
	jobBackoffLimit   int32 = 1
	jobAttemptMargin        = 15 * time.Second
	jobStartMargin          = 2 * time.Minute
	jobTTLAfterFinish int32 = 3600
	// jobNameMax is the longest Job name: its pods carry it in a label, and label values stop at 63.
	jobNameMax = 63
)

// benchLabels go on a benchmark's Job and pods.
func benchLabels(ci *cachev1alpha1.CacheInstance) map[string]string {
	return map[string]string{
		labelName:      benchAppName,
		labelInstance:  ci.Name,
		LabelManagedBy: ManagedBy,
		labelComponent: "benchmark",
	}
}

// jobName names the Job of one step: the benchmark's name and the io-threads setting of a sweep
// ("-io4"), or "-run" for a benchmark that measures the instance as it runs. A benchmark name too
// long for that is cut and made unique again with a hash of the whole name.
func jobName(cb *cachev1alpha1.CacheBenchmark, ioThreads int32) string {
	suffix := "-run"
	if len(cb.Spec.IOThreads) > 0 {
		suffix = fmt.Sprintf("-io%d", ioThreads)
	}
	return boundedName(cb.Name, suffix)
}

// boundedName is base+suffix when that fits a Job's name (jobNameMax), else base cut and made
// unique again with a hash of the whole base, then suffix.
func boundedName(base, suffix string) string {
	if len(base)+len(suffix) > jobNameMax {
		sum := sha256.Sum256([]byte(base))
		tag := "-" + hex.EncodeToString(sum[:4])
		base = strings.TrimRight(base[:jobNameMax-len(suffix)-len(tag)], "-.") + tag
	}
	return base + suffix
}

// jobDeadline bounds a Job's whole life, every attempt included.
func jobDeadline(w *cachev1alpha1.WorkloadSpec) time.Duration {
	attempt := w.Warmup.Duration + w.Duration.Duration + jobAttemptMargin
	return time.Duration(jobBackoffLimit+1)*attempt + jobStartMargin
}

// benchResources sizes the client when the benchmark names no resources: one whole CPU per client
// thread (at most one thread per connection, as iocache-bench runs them), requests equal to limits
// so the pod is Guaranteed and a static CPU manager gives it cores of its own, and memory for the
// runtime plus each connection's buffers (a 64 KiB reply buffer and a pipeline of requests and
// replies), doubled for the garbage collector.
func benchResources(w *cachev1alpha1.WorkloadSpec) corev1.ResourceRequirements {
	threads := min(w.Threads, w.Clients)
	perConn := int64(64<<10) + 2*int64(w.Pipeline)*(int64(w.DataSize)+64)
	mem := int64(128<<20) + 2*int64(w.Clients)*perConn
	mem = (mem + 1<<20 - 1) &^ (1<<20 - 1) // whole MiB
	list := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(threads), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
}

// benchArgs is iocache-bench's command line. The password comes from a file: it must appear on no
// command line and in no environment variable, where describe, the audit log and ps would show it.
func benchArgs(ci *cachev1alpha1.CacheInstance, w *cachev1alpha1.WorkloadSpec) []string {
	args := []string{benchBinary,
		"--host", ci.Name + "." + ci.Namespace + ".svc",
		"--port", strconv.Itoa(serverPort),
		"--clients", strconv.Itoa(int(w.Clients)),
		"--threads", strconv.Itoa(int(w.Threads)),
		"--pipeline", strconv.Itoa(int(w.Pipeline)),
		"--data-size", strconv.Itoa(int(w.DataSize)),
		"--keyspace", strconv.FormatInt(w.Keyspace, 10),
		"--ratio", w.Ratio,
		"--tests", benchTest,
		"--warmup", w.Warmup.Duration.String(),
		"--duration", w.Duration.Duration.String(),
		// Measure in the server's bench space: the user's keys, evictions and statistics stay
		// as they were.
		"--benchspace",
		// The result goes to the log as well, so kubectl logs shows what the status was read from.
		"--json",
		"--json-out", terminationLogPath,
	}
	// As the bench user, whose ACL lets it name no key outside the prefix
	// (cacheinstance_benchuser.go): a second fence around the user's data after the bench space.
	args = append(args, "--user", bench.UserName, "--password-file", benchAuthDir+"/"+benchSecretKey, "--key-prefix", bench.KeyPrefix)
	if t := ci.Spec.TLS; t != nil {
		args = append(args, "--tls", "--cacert", benchTLSDir+"/"+tlsCAKey)
		if t.AuthClients == cachev1alpha1.TLSAuthClientsRequired {
			args = append(args, "--cert", benchTLSDir+"/"+tlsCertKey, "--key", benchTLSDir+"/"+tlsKeyKey)
		}
	}
	return args
}

// desiredJob builds the Job of one benchmark step from a defaulted CacheBenchmark and its defaulted
// instance. It runs iocache-bench from image against the instance's client Service; the pod keeps
// off the server's node where it can (a client on the server's CPUs measures the contention, not the
// server), and passes Pod Security "restricted".
func desiredJob(cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance, ioThreads int32, image string) *batchv1.Job {
	w := &cb.Spec.Workload
	resources := benchResources(w)
	if cb.Spec.Resources != nil {
		resources = *cb.Spec.Resources.DeepCopy()
	}
	container := corev1.Container{
		Name:                     benchContainerName,
		Image:                    image,
		ImagePullPolicy:          ci.Spec.ImagePullPolicy,
		Command:                  benchArgs(ci, w),
		Resources:                resources,
		TerminationMessagePath:   terminationLogPath,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restrictedContainer(),
	}
	pod := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](nonRootID),
			RunAsGroup:     ptr.To[int64](nonRootID),
			FSGroup:        ptr.To[int64](nonRootID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels(ci)},
					TopologyKey:   corev1.LabelHostname,
				},
			}},
		}},
	}
	// The bench user's password, never the instance's.
	container.VolumeMounts = []corev1.VolumeMount{{Name: "auth", MountPath: benchAuthDir, ReadOnly: true}}
	pod.Volumes = []corev1.Volume{{Name: "auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  benchSecretName(ci),
		Items:       []corev1.KeyToPath{{Key: benchSecretKey, Path: benchSecretKey}},
		DefaultMode: ptr.To[int32](0o440),
	}}}}
	if t := ci.Spec.TLS; t != nil {
		// The client needs the CA; a certificate only when it must present one: its own when
		// cert-manager issues it one (the same issuer, so the same CA), else the server's.
		items := []corev1.KeyToPath{{Key: tlsCAKey, Path: tlsCAKey}}
		if t.AuthClients == cachev1alpha1.TLSAuthClientsRequired {
			items = append(items, corev1.KeyToPath{Key: tlsCertKey, Path: tlsCertKey}, corev1.KeyToPath{Key: tlsKeyKey, Path: tlsKeyKey})
		}
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: benchTLSDir, ReadOnly: true})
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: benchTLSSecretName(ci), Items: items, DefaultMode: ptr.To[int32](0o440),
		}}})
	}
	pod.Containers = []corev1.Container{container}
	pod.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), ci.Spec.ImagePullSecrets...)

	labels := benchLabels(ci)
	annotations := map[string]string{annotationIOThreads: strconv.Itoa(int(ioThreads))}
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            jobName(cb, ioThreads),
			Namespace:       cb.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cb, cachev1alpha1.GroupVersion.WithKind("CacheBenchmark"))},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(jobBackoffLimit),
			ActiveDeadlineSeconds:   ptr.To(int64(math.Ceil(jobDeadline(w).Seconds()))),
			TTLSecondsAfterFinished: ptr.To(jobTTLAfterFinish),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       pod,
			},
		},
	}
}

// benchTLSSecretName is the Secret a Job's TLS files come from: the Jobs' own client certificate
// when cert-manager issues one (cacheinstance_tls.go), else the instance's.
func benchTLSSecretName(ci *cachev1alpha1.CacheInstance) string {
	if benchClientCertificate(ci) {
		return benchCertificateName(ci)
	}
	return ci.TLSSecretName()
}

// jobFinished reports whether the Job is over, and whether it succeeded. Failed carries the Job
// controller's reason (DeadlineExceeded, BackoffLimitExceeded, ...).
func jobFinished(job *batchv1.Job) (finished, succeeded bool, reason, message string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true, c.Reason, c.Message
		case batchv1.JobFailed:
			return true, false, c.Reason, c.Message
		}
	}
	return false, false, "", ""
}
