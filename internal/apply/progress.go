package apply

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
)

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

// progressThreshold is the size from which a run reports its progress: a handful of manifests
// needs none, a folder of hundreds does.
const progressThreshold = 100

type progress struct {
	out         io.Writer
	total, seen int
	step        int
	mu          sync.Mutex
}

func newProgress(out io.Writer, total int) *progress {
	p := &progress{out: out, total: total}
	if total >= progressThreshold {
		p.step = total / 10
	}
	return p
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen++
	if p.step > 0 && (p.seen%p.step == 0 || p.seen == p.total) {
		fmt.Fprintf(p.out, "progress: %d/%d applied\n", p.seen, p.total)
	}
}
