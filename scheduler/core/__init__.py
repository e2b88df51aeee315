"""Small shared pieces every package may use: units, the clock, errors, the project's place,
terminal text and the HTTP server; they import nothing else of the scheduler."""
