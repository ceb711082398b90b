module chirunner

go 1.26.8

require (
	github.com/go-chi/chi/v5 v5.5.0
	github.com/rs/cors v1.11.1
)
