package logging

import (
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"platform.dev/platform/apiserver/store"
)

// outageEvery is how often, at most, one process logs that the SQL store does not answer. While
// PostgreSQL restarts every request and every worker's round fails alike: a line each would be
// hundreds a second, with a stack that says nothing the first line did not.
const outageEvery = 5 * time.Second

// outageNote is the field that tells the reader of the first line what happens to the next ones.
const outageNote = "the SQL store does not answer: until it does, one line per %s counts what it refused"

// maxOutageKinds bounds the kinds of refusal a summary counts apart; the rest count as "other".
const maxOutageKinds = 16

// outages holds back the errors that say the SQL store is unreachable (store.Unreachable): the
// first is written at once (without its stack), the following are counted, and every outageEvery
// a summary line says how many were refused and by what, until a period passes without any.
type outages struct {
	every time.Duration
	// base writes the summaries: the logger's core without the fields of any With.
	base zapcore.Core

	mu sync.Mutex
	// quiet: a line was written and the period that counts instead of writing is running.
	quiet   bool
	refused int
	by      map[string]int
	last    error
}

func newOutages(base zapcore.Core, every time.Duration) *outages {
	return &outages{base: base, every: every}
}

// refuse counts an error of the store's outage and says whether to write it now.
func (o *outages) refuse(e zapcore.Entry, err error) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.quiet {
		o.quiet = true
		time.AfterFunc(o.every, o.summarize)
		return true
	}
	o.refused++
	o.last = err
	kind := e.LoggerName + ": " + e.Message
	if o.by == nil {
		o.by = map[string]int{}
	}
	if _, ok := o.by[kind]; !ok && len(o.by) >= maxOutageKinds {
		kind = "other"
	}
	o.by[kind]++
	return false
}

// summarize ends a period: it writes what the period refused, if anything, and starts the next;
// a period that refused nothing ends the quiet, so the next outage is written at once.
func (o *outages) summarize() {
	o.mu.Lock()
	n, by, last := o.refused, o.by, o.last
	o.refused, o.by, o.last = 0, nil, nil
	if n == 0 {
		o.quiet = false
	} else {
		time.AfterFunc(o.every, o.summarize)
	}
	o.mu.Unlock()
	if n == 0 {
		return
	}
	entry := zapcore.Entry{Level: zapcore.ErrorLevel, Time: time.Now(), LoggerName: "store",
		Message: fmt.Sprintf("the SQL store still does not answer: %d refused in the last %s", n, o.every)}
	if o.base.Enabled(entry.Level) {
		_ = o.base.Write(entry, []zapcore.Field{zap.Error(last), zap.Int("refused", n), zap.Any("refusedBy", by)})
	}
}

// outageCore writes through its Core every entry but the errors of the store's outage, which
// outages holds back.
type outageCore struct {
	zapcore.Core
	o *outages
}

func (c outageCore) With(fields []zapcore.Field) zapcore.Core {
	return outageCore{Core: c.Core.With(fields), o: c.o}
}

// Check takes errors itself, so that Write sees their error field; other entries go to the Core.
func (c outageCore) Check(e zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Level >= zapcore.ErrorLevel && c.Enabled(e.Level) {
		return checked.AddCore(e, c)
	}
	return c.Core.Check(e, checked)
}

func (c outageCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	err := errorOf(fields)
	if err == nil || !sqlOutage(err) {
		return c.Core.Write(e, fields)
	}
	if !c.o.refuse(e, err) {
		return nil
	}
	e.Stack = ""
	fields = append(fields[:len(fields):len(fields)], zap.String("outage", fmt.Sprintf(outageNote, c.o.every)))
	return c.Core.Write(e, fields)
}

// sqlOutage says err is the SQL store's not answering. store.Unreachable takes any network error;
// those of the platform's outbound requests (a registry, a model provider, the kube API) come
// wrapped in *url.Error by net/http, which the store's never are, and are written as ever.
func sqlOutage(err error) bool {
	var outbound *url.Error
	return store.Unreachable(err) && !errors.As(err, &outbound)
}

// errorOf is the error of an entry (logr's Error puts it in the field "error").
func errorOf(fields []zapcore.Field) error {
	for _, f := range fields {
		if f.Type == zapcore.ErrorType {
			if err, ok := f.Interface.(error); ok {
				return err
			}
		}
	}
	return nil
}
