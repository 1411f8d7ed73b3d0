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
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// epoch is the time stamped on every file and on the image: fixed, so builds are reproducible.
var epoch = time.Unix(0, 0).UTC()

func main() {
	var tags, labels, ports, env multi
	out := flag.String("out", "", "tarball to write (required)")
	entrypoint := flag.String("entrypoint", "", "entrypoint, one path (required)")
	user := flag.String("user", "65532:65532", "user:group the entrypoint runs as")
	workdir := flag.String("workdir", "/home/nonroot", "working directory")
	flag.Var(&tags, "tag", "image reference to tag the image with (repeatable, at least one)")
	flag.Var(&labels, "label", "key=value label (repeatable)")
	flag.Var(&ports, "port", "exposed port, e.g. 6379/tcp (repeatable)")
	flag.Var(&env, "env", "KEY=value environment variable (repeatable; PATH is set)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: image -tag REF -out FILE -entrypoint PATH [flags] SRC=DST ...\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || *entrypoint == "" || len(tags) == 0 || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, *entrypoint, *user, *workdir, tags, labels, ports, env, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(out, entrypoint, user, workdir string, tags, labels, ports, env, files []string) error {
	layerTar, err := buildLayer(files, workdir)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
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
				return fmt.Errorf("label %q: want key=value", l)
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
		return fmt.Errorf("config: %w", err)
	}

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
