package identity

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	domain "platform.dev/platform/apiserver/identity"
)

const patPage = "/account/pat"

// patPageData is what /account/pat shows besides the common page data.
type patPageData struct {
	Tokens      []domain.PersonalAccessToken
	Workspaces  []domain.Workspace
	Permissions []domain.Permission
	// Created is the token just made, shown once on the page that answers its creation.
	Created string
	Now     time.Time
}

func (p *pages) registerPATPages(mux *http.ServeMux) {
	mux.HandleFunc("GET "+patPage, p.pats)
	mux.HandleFunc("POST "+patPage, p.createPAT)
	mux.HandleFunc("POST "+patPage+"/revoke", p.revokePAT)
}

func (p *pages) renderPATs(w http.ResponseWriter, r *http.Request, status int, pr domain.Principal, data pageData, created string) {
	tokens, err := p.s.Identity().ListPATs(r.Context(), pr.ID)
	if err != nil {
		p.internalError(w, r)
		return
	}
	workspaces, err := p.s.Identity().ReadableWorkspaces(r.Context(), pr.ID, "")
	if err != nil {
		p.internalError(w, r)
		return
	}
	data.Title, data.Principal = "Personal access tokens", &pr
	data.PAT = &patPageData{Tokens: tokens, Workspaces: workspaces, Permissions: domain.PATAllowed.List(), Created: created, Now: time.Now()}
	data.Wide = true
	p.render(w, r, status, "pat.html", data)
}

func (p *pages) pats(w http.ResponseWriter, r *http.Request) {
	pr, _, ok := p.requireSession(w, r)
	if !ok {
		return
	}
	p.renderPATs(w, r, http.StatusOK, pr, pageData{Message: r.URL.Query().Get("done")}, "")
}

func (p *pages) createPAT(w http.ResponseWriter, r *http.Request) {
	pr, _, ok := p.requireSession(w, r)
	if !ok || !p.verified(w, r) {
		return
	}
	var permissions domain.Permissions
	var problems []string
	for _, name := range r.PostForm["permissions"] {
		permission, err := domain.ParsePermission(name)
		if err != nil {
			problems = append(problems, "Unknown permission "+strconv.Quote(name)+".")
			continue
		}
		permissions |= domain.PermissionsOf(permission)
	}
	days, err := strconv.Atoi(r.PostFormValue("expiresInDays"))
	if err != nil || days < 1 || days > 365 {
		problems = append(problems, "The token must expire in 1 to 365 days.")
	}
	values := map[string]string{"name": r.PostFormValue("name")}
	if len(problems) > 0 {
		p.renderPATs(w, r, http.StatusUnprocessableEntity, pr, pageData{Problems: problems, Values: values}, "")
		return
	}
	_, token, err := p.s.Identity().CreatePAT(r.Context(), pr.ID, domain.NewPAT{
		PrincipalID: pr.ID, WorkspaceID: r.PostFormValue("workspace"), Name: r.PostFormValue("name"),
		Permissions: permissions, ExpiresAt: time.Now().Add(time.Duration(days) * 24 * time.Hour),
	})
	if err != nil {
		message := "The token could not be created."
		switch {
		case errors.Is(err, domain.ErrInvalidPATName):
			message = "The name is 1 to 100 characters without control characters or surrounding spaces."
		case errors.Is(err, domain.ErrInvalidPATPermission):
			message = "Choose at least one permission."
		case errors.Is(err, domain.ErrWorkspaceNotFound):
			message = "Choose a workspace you can access."
		case errors.Is(err, domain.ErrInvalidPATExpiry):
			message = "The token must expire in 1 to 365 days."
		case errors.Is(err, domain.ErrPATPrincipal):
			message = "Only an active person can hold personal access tokens."
		default:
			p.internalError(w, r)
			return
		}
		p.renderPATs(w, r, http.StatusUnprocessableEntity, pr, pageData{Problems: []string{message}, Values: values}, "")
		return
	}
	// The token is on this answer only (rendered with Cache-Control: no-store), never again.
	p.renderPATs(w, r, http.StatusCreated, pr, pageData{}, token)
}

func (p *pages) revokePAT(w http.ResponseWriter, r *http.Request) {
	pr, _, ok := p.requireSession(w, r)
	if !ok || !p.verified(w, r) {
		return
	}
	var err error
	if id := r.PostFormValue("token"); id == "" {
		_, err = p.s.Identity().RevokeAllPATs(r.Context(), pr.ID, pr.ID)
	} else {
		err = p.s.Identity().RevokePAT(r.Context(), pr.ID, pr.ID, id)
	}
	if errors.Is(err, domain.ErrPATNotFound) {
		p.renderPATs(w, r, http.StatusNotFound, pr, pageData{Problems: []string{"No such token."}}, "")
		return
	}
	if err != nil {
		p.internalError(w, r)
		return
	}
	http.Redirect(w, r, patPage+"?done=revoked", http.StatusSeeOther)
}
