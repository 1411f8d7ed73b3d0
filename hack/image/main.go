// Command image packs static binaries into a container image tarball without Docker or a registry,
// for the local cluster (hack/local-cluster.sh) to import into its containerd:
//
//	go run ./hack/image -tag ghcr.io/iocache/iocache:v0.1.0 -out bin/image.tar \
//	    -entrypoint /usr/local/bin/manager -user 65532:65532 \
//	    bin/manager=/usr/local/bin/manager bin/iocache-server=/usr/local/bin/iocache-server ...
//
// The image mirrors what the Dockerfile builds on distroless/static:nonroot: one layer with the
// programs, /etc/passwd and /etc/group naming root and nonroot (65532), a world-writable /tmp and
// nonroot's home. Timestamps are fixed, so the same binaries always give the same image digest and
// importing again is a no-op. The tarball is in `docker save` format, which `ctr images import`
// reads, tagged with every -tag.
//
// With several -platform flags (linux/amd64 and linux/arm64) it writes one image per platform and
// an image index over them, as an OCI image layout in a tarball (which `ctr images import` and
// `skopeo copy oci-archive:` read); a SRC may then name its file per platform with {os} and {arch}:
//
//	go run ./hack/image -platform linux/amd64 -platform linux/arm64 -out bin/image-index.tar ... \
//	    bin/linux-{arch}/manager=/usr/local/bin/manager ...
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// epoch is the time stamped on every file and on the image: fixed, so builds are reproducible.
var epoch = time.Unix(0, 0).UTC()

func main() {
	var tags, labels, ports, env, platforms multi
	out := flag.String("out", "", "tarball to write (required)")
	entrypoint := flag.String("entrypoint", "", "entrypoint, one path (required)")
	user := flag.String("user", "65532:65532", "user:group the entrypoint runs as")
	workdir := flag.String("workdir", "/home/nonroot", "working directory")
	flag.Var(&tags, "tag", "image reference to tag the image with (repeatable, at least one)")
	flag.Var(&labels, "label", "key=value label (repeatable)")
	flag.Var(&ports, "port", "exposed port, e.g. 6379/tcp (repeatable)")
	flag.Var(&env, "env", "KEY=value environment variable (repeatable; PATH is set)")
	flag.Var(&platforms, "platform", "os/arch to build for (repeatable; several write an image index; default this machine's)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: image -tag REF -out FILE -entrypoint PATH [flags] SRC=DST ...\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || *entrypoint == "" || len(tags) == 0 || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if len(platforms) == 0 {
		platforms = multi{runtime.GOOS + "/" + runtime.GOARCH}
	}
	o := options{out: *out, entrypoint: *entrypoint, user: *user, workdir: *workdir,
		tags: tags, labels: labels, ports: ports, env: env, platforms: platforms, files: flag.Args()}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	out, entrypoint, user, workdir             string
	tags, labels, ports, env, platforms, files []string
}

// run writes the image, or with several platforms the image index, to o.out.
func run(o options) error {
	var images []v1.Image
	var plats []v1.Platform
	for _, p := range o.platforms {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || arch == "" {
			return fmt.Errorf("platform %q: want os/arch, such as linux/arm64", p)
		}
		files := make([]string, len(o.files))
		for i, f := range o.files {
			files[i] = strings.NewReplacer("{os}", goos, "{arch}", arch).Replace(f)
		}
		img, err := buildImage(o, goos, arch, files, len(o.platforms) > 1)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		images = append(images, img)
		plats = append(plats, v1.Platform{OS: goos, Architecture: arch})
	}
	if len(images) == 1 {
		return writeImage(o.out, o.tags, images[0])
	}
	return writeIndex(o.out, o.tags, images, plats)
}

// buildImage is the image of one platform, with OCI media types when it goes into an index (a
// docker-save tarball keeps Docker's).
func buildImage(o options, goos, arch string, files []string, oci bool) (v1.Image, error) {
	entrypoint, user, workdir, labels, ports, env := o.entrypoint, o.user, o.workdir, o.labels, o.ports, o.env
	layerTar, err := buildLayer(files, workdir)
	if err != nil {
		return nil, err
	}
	var layerOpts []tarball.LayerOption
	if oci {
		layerOpts = append(layerOpts, tarball.WithMediaType(types.OCILayer))
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, layerOpts...)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	base := empty.Image
	if oci {
		base = mutate.ConfigMediaType(mutate.MediaType(base, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = goos
	cf.Architecture = arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{entrypoint}
	cf.Config.User = user
	cf.Config.WorkingDir = workdir
	cf.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	if len(labels) > 0 {
		cf.Config.Labels = map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return nil, fmt.Errorf("label %q: want key=value", l)
			}
			cf.Config.Labels[k] = v
		}
	}
	if len(ports) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range ports {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return img, nil
}

// writeImage writes one image in `docker save` format, tagged with every tag.
func writeImage(out string, tags []string, img v1.Image) error {
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		ref, err := name.NewTag(t, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("tag %q: %w", t, err)
		}
		refs[ref] = img
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n", out, digest, strings.Join(tags, " "))
	return nil
}

// writeIndex writes an image index over the images, one per platform, as an OCI image layout in a
// tarball: index.json names the index once per tag (org.opencontainers.image.ref.name, and the full
// reference under containerd's own annotation, which ctr images import reads).
func writeIndex(out string, tags []string, images []v1.Image, plats []v1.Platform) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range images {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plats[i]}})
	}
	top := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, t := range tags {
		ref, err := name.NewTag(t, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("tag %q: %w", t, err)
		}
		top = mutate.AppendManifests(top, mutate.IndexAddendum{Add: idx, Descriptor: v1.Descriptor{Annotations: map[string]string{
			"org.opencontainers.image.ref.name": ref.TagStr(),
			"io.containerd.image.name":          ref.Name(),
		}}})
	}
	dir, err := os.MkdirTemp("", "iocache-image-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if _, err := layout.Write(dir, top); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	tmp := out + ".tmp"
	if err := tarDir(dir, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (index of %d platforms) %s\n", out, digest, len(images), strings.Join(tags, " "))
	return nil
}

// tarDir writes dir's regular files and directories into a tarball at out, in a stable order and
// with fixed timestamps.
func tarDir(dir, out string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, p := range names {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: epoch, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: fi.Size()}
		if fi.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode, hdr.Size = tar.TypeDir, hdr.Name+"/", 0o755, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.IsDir() {
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if _, err := tw.Write(body); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// buildLayer writes the image's single layer: the base files of a distroless nonroot image, then
// each SRC=DST binary, every directory on the way created once, in a stable order.
func buildLayer(files []string, workdir string) ([]byte, error) {
	type entry struct {
		hdr  tar.Header
		body []byte
	}
	entries := map[string]*entry{}
	dir := func(p string, mode int64, uid int) {
		entries[p] = &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Uid: uid, Gid: uid}}
	}
	var parents func(p string)
	parents = func(p string) {
		d := path.Dir(p)
		if d == "/" || d == "." {
			return
		}
		if _, ok := entries[d]; !ok {
			dir(d, 0o755, 0)
		}
		parents(d)
	}
	file := func(p string, mode int64, body []byte) {
		parents(p)
		entries[p] = &entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(body))}, body: body}
	}

	dir("/tmp", 0o1777, 0)
	parents(workdir)
	dir(workdir, 0o700, 65532)
	file("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
	file("/etc/group", 0o644, []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"))
	for _, f := range files {
		src, dst, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dst) {
			return nil, fmt.Errorf("file %q: want SRC=/absolute/destination", f)
		}
		body, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		file(path.Clean(dst), 0o755, body)
	}

	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names) // parents sort before their children
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		e.hdr.Name = strings.TrimPrefix(e.hdr.Name, "/")
		e.hdr.ModTime = epoch
		e.hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
