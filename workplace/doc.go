// Package workplace is the Workplace UI host, `platform workplace`: it serves the built Workplace
// app and relays the app's API and hub requests to the one configured API origin. It knows the
// server only by its API base URL and hub URL, so it can run anywhere the browser can reach.
package workplace
