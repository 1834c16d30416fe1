package notify

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"platform.dev/platform/apiserver/store"
)

// channel is the PostgreSQL notification channel that every replica listens on.
const channel = "platform_changes"

// maxPayload stays under PostgreSQL's 8000-byte limit of a notification's payload.
const maxPayload = 7000

// Stage queues, in tx, the notification of topics to the other replicas: PostgreSQL delivers it
// when tx commits and never when it rolls back. It does nothing on SQLite, where one process owns
// the database. This process's own subscribers learn of the change from Publish, after the
// commit.
func (h *Hub) Stage(ctx context.Context, tx *sql.Tx, dialect string, topics ...string) error {
	return h.send(ctx, tx, dialect, topics)
}

// Announce tells of topics that a change committed already: at once to the other replicas (on
// PostgreSQL), and to this process's subscribers.
func (h *Hub) Announce(ctx context.Context, db *sql.DB, dialect string, topics ...string) error {
	err := h.send(ctx, db, dialect, topics)
	h.Publish(topics...)
	return err
}

// Notification is the one notification that Stage would send in a transaction for topics, when
// one carries them all (PostgreSQL): a writer of the same transaction may send it with its own
// statement instead (SELECT pg_notify(Channel, Payload) beside it), a statement less. ok is false
// when there is nothing to send, or more than one notification.
func (h *Hub) Notification(dialect string, topics ...string) (channelName, payload string, ok bool) {
	if dialect != store.Postgres || len(topics) == 0 {
		return "", "", false
	}
	n := len(h.origin)
	for _, t := range topics {
		n += 1 + len(t)
	}
	if n > maxPayload {
		return "", "", false
	}
	return channel, h.origin + " " + strings.Join(topics, " "), true
}

// Sender is what a statement that sends this hub's notification itself needs: the channel, the
// hub's origin that starts every payload (its topics follow, each after a space), and the
// payload's limit.
func (h *Hub) Sender() (channelName, origin string, limit int) { return channel, h.origin, maxPayload }

// send notifies the other replicas of topics through tx: a transaction, which delivers them when it
// commits, or the database, which delivers them at once.
func (h *Hub) send(ctx context.Context, tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}, dialect string, topics []string) error {
	if dialect != store.Postgres || len(topics) == 0 {
		return nil
	}
	payload := h.origin
	flush := func() error {
		if payload == h.origin {
			return nil
		}
		_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
		payload = h.origin
		return err
	}
	for _, t := range topics {
		if len(payload)+1+len(t) > maxPayload {
			if err := flush(); err != nil {
				return err
			}
		}
		payload += " " + t
	}
	return flush()
}

// deliver publishes the topics of another replica's notification.
func (h *Hub) deliver(payload string) {
	fields := strings.Fields(payload)
	if len(fields) < 2 || fields[0] == h.origin {
		return
	}
	h.Publish(fields[1:]...)
}

// Listen delivers the notifications of the other replicas sharing s until ctx ends; on SQLite it
// returns at once. It holds one connection of the pool. When that connection is lost it connects
// again, and wakes every subscriber so that none waits on a change it missed meanwhile.
func (h *Hub) Listen(ctx context.Context, s *store.Store, log logr.Logger) {
	if s.Dialect() != store.Postgres {
		return
	}
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		began := time.Now()
		err := h.listenOnce(ctx, s.DB())
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute {
			pause = 100 * time.Millisecond
		}
		log.Info("listening for other replicas' changes failed; listening again", "error", err.Error(), "in", pause.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 10*time.Second)
	}
}

func (h *Hub) listenOnce(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc, ok := store.PgxConn(dc)
		if !ok {
			return fmt.Errorf("notify: the PostgreSQL driver is %T, not pgx", dc)
		}
		if _, err := pc.Exec(ctx, "LISTEN "+channel); err != nil {
			return errors.Join(err, driver.ErrBadConn)
		}
		// A change committed before LISTEN took effect reached nobody here.
		h.wakeAll()
		for {
			n, err := pc.WaitForNotification(ctx)
			if err != nil {
				// The connection keeps listening and queueing notifications while it lives, so
				// it never goes back to the pool.
				return errors.Join(err, driver.ErrBadConn)
			}
			h.deliver(n.Payload)
		}
	})
}
