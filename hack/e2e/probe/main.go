// Command probe runs inside the local cluster during the end-to-end test (image
// localhost/iocache/e2e-probe, packed by hack/image): it fetches each URL given as an argument —
// with the pod's service-account token for https URLs, as Prometheus would — and prints one line
// per URL: "URL STATUS BYTES" followed by the body's metric names, so the test can check from the
// pod's log what a scraper inside the cluster sees. It exits 1 if any fetch fails. An argument
// anon+https://... fetches without the token once and reports the status, which must be a refusal.
package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

const tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

func main() {
	// The operator's metrics endpoint has a self-signed certificate (controller-runtime's default);
	// what is tested is that an authorised token is required and accepted.
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // see above
	}
	failed := false
	for _, url := range os.Args[1:] {
		if anon, ok := strings.CutPrefix(url, "anon+"); ok {
			if err := refused(client, anon); err != nil {
				fmt.Printf("%s ERROR %v\n", url, err)
				failed = true
			}
			continue
		}
		if err := fetch(client, url); err != nil {
			fmt.Printf("%s ERROR %v\n", url, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// refused checks that url answers without credentials with 401 or 403.
func refused(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Printf("anon+%s %d 0 \n", url, resp.StatusCode)
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return fmt.Errorf("answered %d without a token", resp.StatusCode)
	}
	return nil
}

func fetch(client *http.Client, url string) error {
	var lastErr error
	for attempt := 0; attempt < 10; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Second)
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if strings.HasPrefix(url, "https://") {
			tok, err := os.ReadFile(tokenFile)
			if err != nil {
				return fmt.Errorf("service-account token: %w", err)
			}
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		}
		resp, err := client.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		names := map[string]bool{}
		n := 0
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			n += len(line) + 1
			if line == "" || line[0] == '#' {
				continue
			}
			name := line
			if i := strings.IndexAny(line, "{ "); i > 0 {
				name = line[:i]
			}
			names[name] = true
		}
		resp.Body.Close()
		list := make([]string, 0, len(names))
		for k := range names {
			list = append(list, k)
		}
		sort.Strings(list)
		if resp.StatusCode != http.StatusOK {
			// RBAC or endpoints may still be settling: try again, report the last answer.
			lastErr = fmt.Errorf("status %d", resp.StatusCode)
			continue
		}
		fmt.Printf("%s %d %d %s\n", url, resp.StatusCode, n, strings.Join(list, ","))
		return nil
	}
	return lastErr
}
