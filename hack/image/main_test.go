package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// An index for linux/amd64 and linux/arm64: one manifest per platform, each image's config and
// binary for its architecture (read from the ELF header: this machine cannot run arm64 code), and
// index.json naming the index by its tag, as ctr images import reads it.
func TestImageIndexHoldsEachArchitecture(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "probe.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "linux-"+arch, "probe"), src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build for %s: %v\n%s", arch, err, out)
		}
	}
	out := filepath.Join(dir, "index.tar")
	err := run(options{out: out, entrypoint: "/probe", user: "65532:65532", workdir: "/home/nonroot",
		tags: []string{"example.com/iocache/probe:v1"}, platforms: []string{"linux/amd64", "linux/arm64"},
		files: []string{filepath.Join(dir, "linux-{arch}", "probe") + "=/probe"}})
	if err != nil {
		t.Fatal(err)
	}

	oci := filepath.Join(dir, "oci")
	untar(t, out, oci)
	top, err := layout.ImageIndexFromPath(oci)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].MediaType != types.OCIImageIndex ||
		topManifest.Manifests[0].Annotations["io.containerd.image.name"] != "example.com/iocache/probe:v1" ||
		topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Fatalf("index.json %+v: want the image index once, named by its tag", topManifest.Manifests)
	}
	idx, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if len(im.Manifests) != len(want) {
		t.Fatalf("%d manifests in the index, want %d", len(im.Manifests), len(want))
	}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" {
			t.Fatalf("manifest %s without a linux platform: %+v", d.Digest, d.Platform)
		}
		arch := d.Platform.Architecture
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.OS != "linux" || cf.Config.User != "65532:65532" {
			t.Errorf("%s: config says %s/%s, user %q", arch, cf.OS, cf.Architecture, cf.Config.User)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers, %v", arch, len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		body := fileIn(t, rc, "probe")
		rc.Close()
		f, err := elf.NewFile(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: /probe is no ELF file: %v", arch, err)
		}
		if f.Machine != want[arch] {
			t.Errorf("%s image holds a binary for %s", arch, f.Machine)
		}
	}
}

// untar extracts a tarball of regular files and directories into dir.
func untar(t *testing.T, file, dir string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fileIn returns the content of the file named name in a layer's tar stream.
func fileIn(t *testing.T, r io.Reader, name string) []byte {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the layer: %v", name, err)
		}
		if hdr.Name == name {
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return body
		}
	}
}
