{{/*
The proxy's start-up checks, run on the environment the chart gives its container: values the
proxy would refuse (exit 2 at start, the pod in CrashLoopBackOff) stop the render instead, with
the proxy's own message for each problem. The rules mirror the settings table and loader
(src/config/config.ts, values.ts, load.ts) and the checks of src/net/settings.ts,
src/token/settings.ts, src/token/dpop/settings.ts, src/token/discovery/settings.ts, the token
store's (templates/_token-store.tpl) and the traces' (templates/_tracing.tpl); files named by a
setting cannot be read here and are left to the proxy.
Every value here comes from the container's environment, so a message that says where a value
came from says "from the environment".
*/}}

{{/* Every setting of the proxy and its kind, as in SETTINGS of src/config/config.ts (a test
     compares the two). */}}
{{- define "ticket-auth-proxy.settingKinds" -}}
BASE_URL: {type: url}
CLIENT_ID: {type: string}
CLIENT_SECRET: {type: string, secret: true}
CLIENT_SECRET_FILE: {type: path}
ALLOW_INSECURE_HTTP: {type: bool}
LISTEN_HOST: {type: host}
LISTEN_PORT: {type: port}
LISTEN_SOCKET: {type: path}
LISTEN_SOCKET_MODE: {type: mode}
ADMIN_HOST: {type: host}
ADMIN_PORT: {type: port}
READINESS: {type: enum, values: [token, started]}
CONFIG_FILE: {type: path}
TOKEN_URL: {type: url}
ISSUER_URL: {type: url}
TOKEN_SCOPE: {type: string}
TOKEN_AUTH_METHOD: {type: enum, values: [client_secret_post, client_secret_basic, private_key_jwt, tls_client_auth, client_assertion_file, client_secret_jwt]}
TOKEN_PARAMS: {type: params}
CLIENT_ASSERTION_KEY_FILE: {type: path}
CLIENT_ASSERTION_KID: {type: string}
CLIENT_ASSERTION_ALG: {type: enum, values: [RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA]}
CLIENT_ASSERTION_FILE: {type: path}
CLIENT_ASSERTION_TYPE: {type: string}
DPOP: {type: enum, values: ['off', 'on', required]}
DPOP_KEY_FILE: {type: path}
DPOP_ALG: {type: enum, values: [ES256, ES384, EdDSA, PS256, PS384, PS512, RS256, RS384, RS512]}
TOKEN_REFRESH_RATIO: {type: number, min: 0, max: 1, exclusive: true}
TOKEN_DEFAULT_TTL_S: {type: int, min: 1}
TOKEN_WAIT_TIMEOUT_MS: {type: int, min: 0}
TOKEN_FETCH_TIMEOUT_MS: {type: int, min: 1, max: 120000}
UPSTREAM_TIMEOUT_MS: {type: int, min: 1}
UPSTREAM_IDLE_TIMEOUT_MS: {type: int, min: 1}
MAX_HEADER_BYTES: {type: int, min: 1024}
REPLAY_BODY_LIMIT_BYTES: {type: int, min: 0}
CA_FILE: {type: path}
TLS_CLIENT_CERT_FILE: {type: path}
TLS_CLIENT_KEY_FILE: {type: path}
HTTPS_PROXY: {type: proxy}
HTTP_PROXY: {type: proxy}
NO_PROXY: {type: string}
PASSTHROUGH_BASIC: {type: bool}
TOKEN_CACHE_MAX: {type: int, min: 1}
TOKEN_STORE_URL: {type: string, secret: true}
TOKEN_STORE_MODE: {type: enum, values: [standalone, cluster]}
TOKEN_STORE_PASSWORD_FILE: {type: path}
TOKEN_STORE_KEY_FILE: {type: path}
TOKEN_STORE_PREFIX: {type: string}
TOKEN_STORE_TIMEOUT_MS: {type: int, min: 1}
TOKEN_STORE_SCRIPTS: {type: enum, values: [eval, functions]}
SHUTDOWN_DELAY_S: {type: number, min: 0}
SHUTDOWN_TIMEOUT_S: {type: number, min: 0}
LOG_LEVEL: {type: enum, values: [fatal, error, warn, info, debug, trace, silent]}
ACCESS_LOG: {type: bool}
METRICS_RUNTIME: {type: enum, values: [essential, full]}
MEMORY_LIMIT_MB: {type: int, min: 0}
OTEL_EXPORTER_OTLP_ENDPOINT: {type: url}
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {type: url}
OTEL_EXPORTER_OTLP_HEADERS: {type: string, secret: true}
OTEL_EXPORTER_OTLP_PROTOCOL: {type: string}
OTEL_SERVICE_NAME: {type: string}
OTEL_RESOURCE_ATTRIBUTES: {type: string}
OTEL_TRACES_SAMPLER: {type: enum, values: [always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio]}
OTEL_TRACES_SAMPLER_ARG: {type: number, min: 0, max: 1}
OTEL_SDK_DISABLED: {type: bool}
{{- end -}}

{{/* One value of a kind, as the proxy parses it. Argument: (dict "name" "value" "kind").
     Returns YAML {ok: true, value: ...} or {problem: "..."}. */}}
{{- define "ticket-auth-proxy.parseSetting" -}}
{{- $k := .kind -}}
{{- $raw := .value -}}
{{- $got := ternary "" (printf " (got %q)" $raw) (and (eq $k.type "string") (eq (toString $k.secret) "true")) -}}
{{- $s := trim $raw -}}
{{- $problem := "" -}}
{{- if has $k.type (list "string" "path" "url" "host") -}}
{{- if eq $s "" -}}
{{- $problem = printf "%s must be a non-empty string%s" .name $got -}}
{{- else if and (eq $k.type "host") (not (regexMatch "^(\\[[0-9a-fA-F:.]+\\]|[0-9a-fA-F:.]+|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$" $s)) -}}
{{- $problem = printf "%s must be a host name or IP address%s" .name $got -}}
{{- end -}}
{{- else if eq $k.type "bool" -}}
{{- if not (has (lower $s) (list "true" "1" "yes" "false" "0" "no")) -}}
{{- $problem = printf "%s must be true or false%s" .name $got -}}
{{- end -}}
{{- else if eq $k.type "port" -}}
{{- if or (not (regexMatch "^-?[0-9]{1,15}$" $s)) (lt (atoi $s) 0) (gt (atoi $s) 65535) -}}
{{- $problem = printf "%s must be a port number from 0 to 65535%s" .name $got -}}
{{- end -}}
{{- else if eq $k.type "int" -}}
{{- if hasKey $k "max" -}}
{{- if or (not (regexMatch "^-?[0-9]{1,15}$" $s)) (lt (atoi $s) (int $k.min)) (gt (atoi $s) (int $k.max)) -}}
{{- $problem = printf "%s must be an integer from %d to %d%s" .name (int $k.min) (int $k.max) $got -}}
{{- end -}}
{{- else if or (not (regexMatch "^-?[0-9]{1,15}$" $s)) (lt (atoi $s) (int $k.min)) -}}
{{- $problem = printf "%s must be an integer of at least %d%s" .name (int $k.min) $got -}}
{{- end -}}
{{- else if eq $k.type "number" -}}
{{- $numeric := regexMatch "^[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?$" $s -}}
{{- $n := ternary (float64 $s) 0.0 $numeric -}}
{{- if $k.exclusive -}}
{{- if or (not $numeric) (le $n (float64 $k.min)) (ge $n (float64 $k.max)) -}}
{{- $problem = printf "%s must be a number between %v and %v, exclusive%s" .name $k.min $k.max $got -}}
{{- end -}}
{{- else if hasKey $k "max" -}}
{{- if or (not $numeric) (lt $n (float64 $k.min)) (gt $n (float64 $k.max)) -}}
{{- $problem = printf "%s must be a number from %v to %v%s" .name $k.min $k.max $got -}}
{{- end -}}
{{- else if or (not $numeric) (lt $n (float64 $k.min)) -}}
{{- $problem = printf "%s must be a number of at least %v%s" .name $k.min $got -}}
{{- end -}}
{{- else if eq $k.type "mode" -}}
{{- if not (regexMatch "^(0[oO]?)?[0-7]{1,3}$" $s) -}}
{{- $problem = printf "%s must be an octal file mode from 0000 to 0777, such as 0660%s" .name $got -}}
{{- end -}}
{{- else if eq $k.type "enum" -}}
{{- if not (has $s $k.values) -}}
{{- $problem = printf "%s must be one of %s%s" .name (join ", " $k.values) $got -}}
{{- end -}}
{{- else if eq $k.type "params" -}}
{{- /* Field names as URLSearchParams decodes them: "+" is a space, %XX the byte. A field with
       an empty name refuses the whole value, so the names the proxy sets are checked only in
       a value that parses (TOKEN_PARAMS in src/token/settings.ts). */ -}}
{{- $fields := list -}}
{{- range splitList "&" $raw -}}
{{- if ne . "" }}{{ $fields = append $fields (first (splitList "=" .)) }}{{ end -}}
{{- end -}}
{{- if has "" $fields -}}
{{- $problem = printf "%s has a field with an empty name" .name -}}
{{- else -}}
{{- $bad := list -}}
{{- range $fields -}}
{{- $field := . -}}
{{- range list "grant_type" "client_id" "client_secret" "scope" "client_assertion" "client_assertion_type" -}}
{{- $pattern := "" -}}
{{- range splitList "" . }}{{ $pattern = printf "%s(%s|%%(?i:%x))" $pattern (regexQuoteMeta .) . }}{{ end -}}
{{- if regexMatch (printf "^%s$" $pattern) $field }}{{ $bad = append $bad (printf "%s may not set %s: the proxy sets it (use TOKEN_SCOPE for scope)" $.name .) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $problem = join "\n" (uniq $bad) -}}
{{- end -}}
{{- else if eq $k.type "proxy" -}}
{{- if not (include "ticket-auth-proxy.proxyUrlOk" $s) -}}
{{- $problem = printf "%s must be a proxy URL such as http://proxy.example.com:3128 (got %q)" .name (include "ticket-auth-proxy.withoutUserinfo" $raw) -}}
{{- end -}}
{{- end -}}
{{- if $problem -}}
{{- dict "problem" $problem | toYaml -}}
{{- else -}}
{{- dict "ok" true "value" (ternary $s ($s | replace "[" "" | replace "]" "") (ne $k.type "host")) | toYaml -}}
{{- end -}}
{{- end -}}

{{/* One value meant as a URL, as the proxy shows it (withoutUserinfo in src/core/redact.ts): its
     user information replaced by ***, with a scheme and any number of slashes after it, or
     without a scheme (user:pass@proxy:3128), up to the last "@" of the value (a password may
     hold an unencoded "/", "?", "#" or space). */}}
{{- define "ticket-auth-proxy.withoutUserinfo" -}}
{{- regexReplaceAll "(?i)^([a-z][a-z0-9+.-]*:/+)?[\\s\\S]*@" . "${1}***@" -}}
{{- end -}}

{{/* A message as the proxy prints it (redactUserinfo in src/core/redact.ts, which the loader
     applies to every problem): the user information of every URL in it replaced by ***, a URL
     quoted as the messages quote a value running to its closing quote, one not quoted to white
     space. */}}
{{- define "ticket-auth-proxy.redactUserinfo" -}}
{{- $quoted := regexReplaceAll "(?i)(\"[a-z][a-z0-9+.-]*:/*)[^\\n]*@([^\"\\n]*\")" . "${1}***@${2}" -}}
{{- regexReplaceAll "(?i)(\\b[a-z][a-z0-9+.-]*:/*)\\S*@" $quoted "${1}***@" -}}
{{- end -}}

{{/* "true" when decodeURIComponent would decode the text: every "%" begins an octet (%XX), and
     the octets written so spell UTF-8 characters, no overlong form or surrogate among them. */}}
{{- define "ticket-auth-proxy.decodes" -}}
{{- $octet := "%[89ab][0-9a-f]" -}}
{{- $char := list "[^%]" "%[0-7][0-9a-f]" (printf "%%(c[2-9a-f]|d[0-9a-f])%s" $octet) (printf "%%e0%%[ab][0-9a-f]%s" $octet) (printf "%%(e[1-9a-c]|e[ef])(%s){2}" $octet) (printf "%%ed%%[89][0-9a-f]%s" $octet) (printf "%%f0%%[9ab][0-9a-f](%s){2}" $octet) (printf "%%f[1-3](%s){3}" $octet) (printf "%%f4%%8[0-9a-f](%s){2}" $octet) -}}
{{- ternary "true" "" (regexMatch (printf "(?i)^(%s)*$" (join "|" $char)) .) -}}
{{- end -}}

{{/* BASE_URL or TOKEN_URL as the proxy checks it. Argument: (dict "name" "value" "insecure"
     "trimSlash"). Returns YAML {url: normalised} or {problem: "..."}. */}}
{{- define "ticket-auth-proxy.checkUrl" -}}
{{- $s := .value -}}
{{- $shown := include "ticket-auth-proxy.withoutUserinfo" $s -}}
{{- if not (regexMatch "(?i)^https?://[^/?#]+" $s) -}}
{{- $unset := ternary "; unset, it is {BASE_URL}/api/v1/oauth2/token" "" (eq .name "TOKEN_URL") -}}
{{- dict "problem" (printf "%s must be an absolute http(s) URL (got %q): https://host[:port][/path], or http:// for a loopback host (for another host with ALLOW_INSECURE_HTTP=true)%s" .name $shown $unset) | toYaml -}}
{{- else -}}
{{- $scheme := lower (regexReplaceAll "^([^:]+)://.*$" $s "${1}") -}}
{{- $authority := regexReplaceAll "^[^:]+://([^/?#]*).*$" $s "${1}" -}}
{{- $rest := regexReplaceAll "^[^:]+://[^/?#]*" $s "" -}}
{{- $host := lower (regexReplaceAll "^(\\[[^\\]]*\\]|[^:]*)(:.*)?$" $authority "${1}") -}}
{{- $port := regexReplaceAll "^(\\[[^\\]]*\\]|[^:]*):?" $authority "" -}}
{{- $loopback := regexMatch "^(localhost|.*\\.localhost|127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}|\\[::1\\]|\\[::ffff:127\\..*\\]|\\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\\])$" $host -}}
{{- if contains "@" $authority -}}
{{- dict "problem" (printf "%s must not carry credentials in the URL; use CLIENT_ID and CLIENT_SECRET_FILE" .name) | toYaml -}}
{{- else if or (regexMatch "\\?[^#]" $rest) (regexMatch "#." $rest) -}}
{{- dict "problem" (printf "%s must not have a query or fragment (got %q)" .name $shown) | toYaml -}}
{{- else if and (eq $scheme "http") (not .insecure) (not $loopback) -}}
{{- dict "problem" (printf "%s uses http: for a non-loopback host (%s); use https, or set ALLOW_INSECURE_HTTP=true to accept sending credentials in clear text" .name $host) | toYaml -}}
{{- else -}}
{{- $defaultPort := ternary "443" "80" (eq $scheme "https") -}}
{{- $origin := printf "%s://%s%s" $scheme $host (ternary "" (printf ":%s" $port) (or (eq $port "") (eq $port $defaultPort))) -}}
{{- $path := regexReplaceAll "[?#].*$" $rest "" | default "/" -}}
{{- if .trimSlash }}{{ $path = regexReplaceAll "/+$" $path "" }}{{ end -}}
{{- dict "url" (printf "%s%s" $origin $path) | toYaml -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A proxy URL as curl reads one (proxyUrl in src/config/values.ts): no scheme means http://,
     http: or https: only, nothing after the authority, a port up to 65535. "true" or "". */}}
{{- define "ticket-auth-proxy.proxyUrlOk" -}}
{{- $u := ternary . (printf "http://%s" .) (regexMatch "(?i)^[a-z][a-z0-9+.-]*://" .) -}}
{{- $re := "(?i)^https?://(?:[^/?#]*@)?(\\[[0-9a-f:.]+\\]|[^@/?#:<>^|\\\\\\[\\]\\s]+)(?::([0-9]{0,5}))?/?$" -}}
{{- $ok := regexMatch $re $u -}}
{{- ternary "true" "" (and $ok (le (atoi (regexReplaceAll $re $u "${2}")) 65535)) -}}
{{- end -}}

{{/*
The problems the proxy would report at start, one per line, for the environment of `env` (a map
of name to value; a value taken from a Secret is null: set, its content unknown). `scope` says
which of the proxy's checks run (src/app/settings-checks.ts): "all", without routes; with routes
(docs/routes.md), "process", the whole proxy's checks of the top-level settings, where BASE_URL
is a default rather than required, and "route", a route's checks (its gateway, credential, DPoP
and issuer) of its settings over the top level's.
*/}}
{{- define "ticket-auth-proxy.startProblems" -}}
{{- $env := .env -}}
{{- $scope := .scope | default "all" -}}
{{- $routeChecks := ne $scope "process" -}}
{{- $processChecks := ne $scope "route" -}}
{{- $kinds := include "ticket-auth-proxy.settingKinds" . | fromYaml -}}
{{- $problems := list -}}
{{- $out := dict -}}
{{- /* The proxy reads https_proxy, http_proxy and no_proxy too; the chart's variables are upper-case
       (extraEnv names by values.schema.json), so each setting is read from its own name only. */ -}}
{{- $set := dict -}}
{{- range $name, $kind := $kinds -}}
{{- if hasKey $env $name -}}
{{- $value := index $env $name -}}
{{- if kindIs "invalid" $value -}}
{{- $_ := set $set $name true -}}
{{- $_ := set $out $name "(from a Secret)" -}}
{{- else if ne (toString $value) "" -}}
{{- $_ := set $set $name true -}}
{{- $r := include "ticket-auth-proxy.parseSetting" (dict "name" $name "value" (toString $value) "kind" $kind) | fromYaml -}}
{{- if $r.ok }}{{ $_ := set $out $name $r.value }}{{ else }}{{ $problems = concat $problems (splitList "\n" $r.problem) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $insecure := has (lower (toString (index $out "ALLOW_INSECURE_HTTP" | default "false"))) (list "true" "1" "yes") -}}
{{- $baseUrl := "" -}}
{{- if hasKey $out "BASE_URL" -}}
{{- $r := include "ticket-auth-proxy.checkUrl" (dict "name" "BASE_URL" "value" $out.BASE_URL "insecure" $insecure "trimSlash" true) | fromYaml -}}
{{- if $r.problem }}{{ $problems = append $problems $r.problem }}{{ else }}{{ $baseUrl = $r.url }}{{ end -}}
{{- else if and (eq $scope "all") (not (hasKey $set "BASE_URL")) -}}
{{- $problems = append $problems "BASE_URL is required: the gateway base URL, e.g. https://tickets.example.com" -}}
{{- end -}}
{{- $tail := regexFind "(?i)/api/v1(/oauth2/token)?$" $baseUrl -}}
{{- if and $tail (or (contains "/oauth2/token" (lower $tail)) (not (hasPrefix (printf "%s/api/v1/" $baseUrl) (toString (index $out "TOKEN_URL" | default ""))))) -}}
{{- $base := trimSuffix $tail $baseUrl -}}
{{- $problem := printf "BASE_URL ends in %s (got %q): the proxy adds /api/v1 itself, so set it to the gateway's base URL, %s" $tail $baseUrl $base -}}
{{- if not (contains "/oauth2/token" (lower $tail)) -}}
{{- $problem = printf "%s; a gateway whose API really is at %s/api/v1 keeps this value and sets TOKEN_URL=%s/api/v1/oauth2/token as well" $problem $baseUrl $baseUrl -}}
{{- end -}}
{{- $problems = append $problems $problem -}}
{{- end -}}
{{- range list "TOKEN_URL" "ISSUER_URL" -}}
{{- if hasKey $out . -}}
{{- $r := include "ticket-auth-proxy.checkUrl" (dict "name" . "value" (index $out .) "insecure" $insecure "trimSlash" false) | fromYaml -}}
{{- if $r.problem }}{{ $problems = append $problems $r.problem }}{{ end -}}
{{- end -}}
{{- end -}}
{{- /* ISSUER_URL's metadata names the token endpoint (checkIssuerSettings in src/token/discovery/settings.ts). */ -}}
{{- if and $routeChecks (hasKey $set "ISSUER_URL") (hasKey $set "TOKEN_URL") -}}
{{- $problems = append $problems "ISSUER_URL and TOKEN_URL are both set (ISSUER_URL from the environment, TOKEN_URL from the environment): ISSUER_URL's metadata names the token endpoint; set only one (ISSUER_URL to read it from the identity provider, TOKEN_URL to name it yourself)" -}}
{{- end -}}
{{- /* Credentials and the client authentication method. */ -}}
{{- $method := index $out "TOKEN_AUTH_METHOD" | default "client_secret_post" -}}
{{- if $routeChecks -}}
{{- $methodName := printf "TOKEN_AUTH_METHOD=%s" $method -}}
{{- $hasId := hasKey $out "CLIENT_ID" -}}
{{- $hasSecret := or (hasKey $out "CLIENT_SECRET") (hasKey $out "CLIENT_SECRET_FILE") -}}
{{- /* Where each of two settings that may not be set together came from (bothSet in
       src/config/load.ts): every value here is from the environment. */ -}}
{{- $origin := dict -}}
{{- range list "CLIENT_SECRET" "CLIENT_SECRET_FILE" "CLIENT_ASSERTION_KEY_FILE" "CLIENT_ASSERTION_FILE" -}}
{{- $_ := set $origin . (ternary (printf "%s from the environment" .) (printf "%s unset" .) (hasKey $set .)) -}}
{{- end -}}
{{- if and (hasKey $out "CLIENT_SECRET") (hasKey $out "CLIENT_SECRET_FILE") -}}
{{- $problems = append $problems (printf "CLIENT_SECRET and CLIENT_SECRET_FILE are both set (%s, %s): set only one (the file is preferred)" $origin.CLIENT_SECRET $origin.CLIENT_SECRET_FILE) -}}
{{- end -}}
{{- $passthrough := has (lower (toString (index $out "PASSTHROUGH_BASIC" | default "false"))) (list "true" "1" "yes") -}}
{{- if not (has $method (list "client_secret_post" "client_secret_basic" "client_secret_jwt")) -}}
{{- if not $hasId }}{{ $problems = append $problems (printf "CLIENT_ID is required with %s" $methodName) }}{{ end -}}
{{- else if or (not $passthrough) $hasId $hasSecret -}}
{{- if not $hasId }}{{ $problems = append $problems "CLIENT_ID is required: the client identifier from the workspace settings" }}{{ end -}}
{{- if not $hasSecret }}{{ $problems = append $problems "CLIENT_SECRET_FILE (or CLIENT_SECRET) is required: the client secret from the workspace settings" }}{{ end -}}
{{- end -}}
{{- $secretName := ternary "CLIENT_SECRET_FILE" "CLIENT_SECRET" (hasKey $set "CLIENT_SECRET_FILE") -}}
{{- $secretSet := or (hasKey $set "CLIENT_SECRET") (hasKey $set "CLIENT_SECRET_FILE") -}}
{{- $keySet := hasKey $set "CLIENT_ASSERTION_KEY_FILE" -}}
{{- $fileSet := hasKey $set "CLIENT_ASSERTION_FILE" -}}
{{- if eq $method "private_key_jwt" -}}
{{- if and $secretSet $keySet }}{{ $problems = append $problems (printf "%s and CLIENT_ASSERTION_KEY_FILE are both set (%s, %s): %s signs with the key and sends no secret; remove the secret" $secretName (index $origin $secretName) $origin.CLIENT_ASSERTION_KEY_FILE $methodName) }}
{{- else if $secretSet }}{{ $problems = append $problems (printf "%s is set (%s): %s signs with the key and sends no secret; remove the secret" $secretName (index $origin $secretName) $methodName) }}{{ end -}}
{{- if $fileSet }}{{ $problems = append $problems (printf "CLIENT_ASSERTION_FILE is set with %s: it belongs to TOKEN_AUTH_METHOD=client_assertion_file" $methodName) }}{{ end -}}
{{- if not $keySet }}{{ $problems = append $problems (printf "CLIENT_ASSERTION_KEY_FILE is required with %s: a PEM private key (RSA 2048+, EC P-256/P-384 or Ed25519)" $methodName) }}{{ end -}}
{{- else if eq $method "client_assertion_file" -}}
{{- $assertionSet := hasKey $set "CLIENT_ASSERTION_FILE" -}}
{{- if and $secretSet $assertionSet }}{{ $problems = append $problems (printf "%s and CLIENT_ASSERTION_FILE are both set (%s, %s): %s sends the file's assertion and no secret; remove the secret" $secretName (index $origin $secretName) $origin.CLIENT_ASSERTION_FILE $methodName) }}
{{- else if $secretSet }}{{ $problems = append $problems (printf "%s is set (%s): %s sends the file's assertion and no secret; remove the secret" $secretName (index $origin $secretName) $methodName) }}{{ end -}}
{{- if and $keySet $assertionSet }}{{ $problems = append $problems (printf "CLIENT_ASSERTION_KEY_FILE and CLIENT_ASSERTION_FILE are both set (%s, %s): %s sends the file's assertion; remove the key" $origin.CLIENT_ASSERTION_KEY_FILE $origin.CLIENT_ASSERTION_FILE $methodName) }}
{{- else if $keySet }}{{ $problems = append $problems (printf "CLIENT_ASSERTION_KEY_FILE is set (%s): %s sends the file's assertion; remove the key" $origin.CLIENT_ASSERTION_KEY_FILE $methodName) }}{{ end -}}
{{- if not $fileSet }}{{ $problems = append $problems (printf "CLIENT_ASSERTION_FILE is required with %s: the file a projected token or JWT-SVID is written to" $methodName) }}{{ end -}}
{{- else -}}
{{- if and (eq $method "tls_client_auth") $secretSet }}{{ $problems = append $problems (printf "%s is set with %s: the client certificate proves the client; remove the secret" $secretName $methodName) }}{{ end -}}
{{- if $keySet }}{{ $problems = append $problems (printf "CLIENT_ASSERTION_KEY_FILE is set but TOKEN_AUTH_METHOD is %s; set TOKEN_AUTH_METHOD=private_key_jwt or remove it" $method) }}{{ end -}}
{{- if $fileSet }}{{ $problems = append $problems (printf "CLIENT_ASSERTION_FILE is set but TOKEN_AUTH_METHOD is %s; set TOKEN_AUTH_METHOD=client_assertion_file or remove it" $method) }}{{ end -}}
{{- end -}}
{{- if ne $method "private_key_jwt" -}}
{{- range list "CLIENT_ASSERTION_KID" "CLIENT_ASSERTION_ALG" -}}
{{- if hasKey $set . }}{{ $problems = append $problems (printf "%s is set but TOKEN_AUTH_METHOD is %s; it applies to private_key_jwt only" . $method) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* The client certificate, both or neither. */ -}}
{{- $hasCert := hasKey $out "TLS_CLIENT_CERT_FILE" -}}
{{- $hasKey := hasKey $out "TLS_CLIENT_KEY_FILE" -}}
{{- if and $routeChecks (eq $method "tls_client_auth") (not $hasCert) (not $hasKey) -}}
{{- $problems = append $problems "TOKEN_AUTH_METHOD=tls_client_auth needs TLS_CLIENT_CERT_FILE and TLS_CLIENT_KEY_FILE: the client certificate is what proves the client" -}}
{{- else if ne $hasCert $hasKey -}}
{{- $problems = append $problems (ternary "TLS_CLIENT_CERT_FILE is set without TLS_CLIENT_KEY_FILE: set both (certificate chain and key) or neither" "TLS_CLIENT_KEY_FILE is set without TLS_CLIENT_CERT_FILE: set both (certificate chain and key) or neither" $hasCert) -}}
{{- end -}}
{{- if $processChecks -}}
{{- /* The proxy listener (checkListenerSettings in src/app/listeners/listener-settings.ts): a Unix socket or a
       TCP address; a path a socket address holds (socketPathProblem in src/app/listeners/unix-socket.ts, on
       Linux), with the private directory the socket is made in first; a mode someone may connect by. */ -}}
{{- if hasKey $set "LISTEN_SOCKET" -}}
{{- range list "LISTEN_HOST" "LISTEN_PORT" -}}
{{- if hasKey $set . }}{{ $problems = append $problems (printf "LISTEN_SOCKET and %s are both set (LISTEN_SOCKET from the environment, %s from the environment): the proxy listener is a Unix socket (LISTEN_SOCKET) or a TCP address (LISTEN_HOST, LISTEN_PORT), not both; remove %s" . . .) }}{{ end -}}
{{- end -}}
{{- with index $out "LISTEN_SOCKET" -}}
{{- $dir := dir . -}}
{{- if hasSuffix "/" . -}}
{{- $problems = append $problems (printf "LISTEN_SOCKET names a directory (%s): it names the socket file itself, e.g. %sproxy.sock" . .) -}}
{{- else if gt (len .) 107 -}}
{{- $problems = append $problems (printf "LISTEN_SOCKET is %d bytes long: a Unix socket path holds at most 107 bytes here; choose a shorter path" (len .)) -}}
{{- else if gt (add (len $dir) 10) 107 -}}
{{- $problems = append $problems (printf "LISTEN_SOCKET's directory is too long: the socket is made in a private directory beside its path first (%d bytes in all), and a Unix socket path holds at most 107 bytes here; choose a shorter directory" (add (len $dir) 10)) -}}
{{- end -}}
{{- end -}}
{{- with index $out "LISTEN_SOCKET_MODE" -}}
{{- $digits := regexReplaceAll "^(0[oO]?)?" . "" -}}
{{- $writable := false -}}
{{- range splitList "" $digits }}{{ if has . (list "2" "3" "6" "7") }}{{ $writable = true }}{{ end }}{{ end -}}
{{- if not $writable -}}
{{- $problems = append $problems (printf "LISTEN_SOCKET_MODE %s lets no one connect: connecting to a socket takes write permission on its file; use 0660 (the proxy and its group) or 0600 (the proxy alone)" (printf "%04d" (atoi $digits))) -}}
{{- end -}}
{{- end -}}
{{- else if hasKey $set "LISTEN_SOCKET_MODE" -}}
{{- $problems = append $problems "LISTEN_SOCKET_MODE is set without LISTEN_SOCKET: the mode is the socket file's; set LISTEN_SOCKET or remove it" -}}
{{- end -}}
{{- end -}}
{{- /* DPoP (checkDpopSettings in src/token/dpop/settings.ts): a key or an algorithm while DPOP is
       off would leave the tokens bearer tokens unnoticed. A value refused on its own is reported
       already; the key file itself cannot be read here and is left to the proxy. */ -}}
{{- if and $routeChecks (eq (index $out "DPOP" | default "off") "off") -}}
{{- range list "DPOP_KEY_FILE" "DPOP_ALG" -}}
{{- if hasKey $out . }}{{ $problems = append $problems (printf "%s is set but DPOP is off: set DPOP=on (or required) to send DPoP proofs, or remove it" .) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if $processChecks -}}
{{- $store := include "ticket-auth-proxy.tokenStoreProblems" (dict "env" $env) -}}
{{- if $store }}{{ $problems = concat $problems (splitList "\n" $store) }}{{ end -}}
{{- $tracing := include "ticket-auth-proxy.tracingProblems" (dict "env" $env "out" $out) -}}
{{- if $tracing }}{{ $problems = concat $problems (splitList "\n" $tracing) }}{{ end -}}
{{- end -}}
{{- /* Whatever a check quoted, a URL's user information is not shown (loadConfig in src/config/load.ts). */ -}}
{{- $redacted := list -}}
{{- range $problems }}{{ $redacted = append $redacted (include "ticket-auth-proxy.redactUserinfo" .) }}{{ end -}}
{{- join "\n" $redacted -}}
{{- end -}}

{{/* The chart value each setting comes from, named before a problem that starts with it. */}}
{{- define "ticket-auth-proxy.valueOf" -}}
BASE_URL: baseUrl
TOKEN_URL: tokenUrl
ISSUER_URL: issuerUrl
TOKEN_SCOPE: tokenScope
CLIENT_ID: clientId
CLIENT_ASSERTION_TYPE: auth.serviceAccountToken.clientAssertionType
HTTPS_PROXY: egressProxy.httpsProxy
HTTP_PROXY: egressProxy.httpProxy
NO_PROXY: egressProxy.noProxy
LISTEN_SOCKET: listenSocket
LISTEN_SOCKET_MODE: listenSocketMode
DPOP: dpop.mode
DPOP_KEY_FILE: dpop.existingSecret
DPOP_ALG: dpop.alg
TOKEN_STORE_URL: tokenStore.url
TOKEN_STORE_MODE: tokenStore.mode
TOKEN_STORE_PASSWORD_FILE: tokenStore.existingSecret
TOKEN_STORE_KEY_FILE: tokenStore.keyFileKey
TOKEN_STORE_PREFIX: tokenStore.prefix
TOKEN_STORE_TIMEOUT_MS: tokenStore.timeoutMs
TOKEN_STORE_SCRIPTS: tokenStore.scripts
OTEL_EXPORTER_OTLP_ENDPOINT: tracing.endpoint
OTEL_TRACES_SAMPLER: tracing.sampler
OTEL_TRACES_SAMPLER_ARG: tracing.samplerArg
OTEL_EXPORTER_OTLP_HEADERS: tracing.existingSecret
{{- end -}}

{{/* Chart values named back after a problem whose remedy is a setting the chart sets. */}}
{{- define "ticket-auth-proxy.valueHints" -}}
"ALLOW_INSECURE_HTTP=true": "allowInsecureHttp: true"
"TOKEN_URL=": tokenUrl
"use CLIENT_ID and CLIENT_SECRET_FILE": "existingSecret, or createSecret with clientId and clientSecret"
"set DPOP=on (or required)": 'dpop.mode: "on" or "required"'
"set TOKEN_STORE_PASSWORD_FILE": "tokenStore.existingSecret with tokenStore.passwordKey"
"needs TOKEN_STORE_MODE=cluster": "tokenStore.mode: cluster"
{{- end -}}

{{/*
A problem of a route's own settings (startProblems on the route's settings over the top level's)
in the proxy's words: each of the route's settings named as the proxy names a key of the file
(`routes[eu].dpopAlg in /etc/ticket-auth-proxy/config/proxy.yaml (DPOP_ALG)`), or, where the
problem names none, the route before it. Argument: (dict "ctx" $ "line" "route").
*/}}
{{- define "ticket-auth-proxy.inRouteWords" -}}
{{- $line := .line -}}
{{- $route := .route -}}
{{- $file := include "ticket-auth-proxy.configFile" .ctx -}}
{{- $named := false -}}
{{- $settings := include "ticket-auth-proxy.routeSettings" .ctx | fromYaml -}}
{{- $_ := set $settings "clientSecretFile" "CLIENT_SECRET_FILE" -}}
{{- $given := include "ticket-auth-proxy.routeEnv" (dict "ctx" .ctx "route" $route) | fromYaml -}}
{{- range $key, $name := $settings -}}
{{- if hasKey $given $name -}}
{{- $where := printf "routes[%s].%s in %s" $route.name $key $file -}}
{{- /* Two settings said together name where each came from (bothSet in src/config/load.ts). */ -}}
{{- if contains (printf "%s from the environment" $name) $line -}}
{{- $line = replace (printf "%s from the environment" $name) (printf "%s from %s" $name $where) $line -}}
{{- $named = true -}}
{{- else if and (not (contains " from the environment" $line)) (or (hasPrefix (printf "%s " $name) $line) (hasPrefix (printf "%s's " $name) $line)) -}}
{{- $line = printf "%s (%s)%s" $where $name (trimPrefix $name $line) -}}
{{- $named = true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $named }}{{ $line }}{{ else }}{{ printf "routes: %q: %s" $route.name $line }}{{ end -}}
{{- end -}}

{{/*
Stops the render when the proxy would refuse its environment at start. Renders the container the
chart gives the proxy (environment and extraEnv, last one winning as in Kubernetes) and checks it.
*/}}
{{- define "ticket-auth-proxy.validate" -}}
{{- $container := include "ticket-auth-proxy.container" (dict "ctx" . "role" "standalone" "validating" true) | fromYaml -}}
{{- $env := dict -}}
{{- range $container.env -}}
{{- if hasKey . "value" }}{{ $_ := set $env .name (toString .value) }}{{ else }}{{ $_ := set $env .name nil }}{{ end -}}
{{- end -}}
{{- $routes := (include "ticket-auth-proxy.values" . | fromYaml).routes -}}
{{- $problems := "" -}}
{{- if not $routes -}}
{{- $problems = include "ticket-auth-proxy.startProblems" (dict "env" $env) -}}
{{- else -}}
{{- /* With routes: the whole proxy's checks once, each route's on its settings over the top
       level's; a problem every route inherits from the top level is said once, as the proxy
       says it, and one of a route's own settings names the route. */ -}}
{{- $lines := splitList "\n" (include "ticket-auth-proxy.startProblems" (dict "env" $env "scope" "process")) -}}
{{- $inherited := splitList "\n" (include "ticket-auth-proxy.startProblems" (dict "env" $env "scope" "route")) -}}
{{- range $routes -}}
{{- $routeEnv := dict -}}
{{- range $k, $value := $env }}{{ $_ := set $routeEnv $k $value }}{{ end -}}
{{- $overlay := include "ticket-auth-proxy.routeEnv" (dict "ctx" $ "route" .) | fromYaml -}}
{{- range $k, $value := $overlay }}{{ $_ := set $routeEnv $k $value }}{{ end -}}
{{- /* A route's own key overrides the top level's alternatives to it (ALTERNATIVES in src/config/load.ts). */ -}}
{{- range $group := list (list "CLIENT_SECRET" "CLIENT_SECRET_FILE" "CLIENT_ASSERTION_KEY_FILE" "CLIENT_ASSERTION_FILE") (list "TOKEN_URL" "ISSUER_URL") -}}
{{- $own := false }}{{ range $group }}{{ if hasKey $overlay . }}{{ $own = true }}{{ end }}{{ end -}}
{{- if $own }}{{ range $group }}{{ if not (hasKey $overlay .) }}{{ $_ := unset $routeEnv . }}{{ end }}{{ end }}{{ end -}}
{{- end -}}
{{- $route := . -}}
{{- range splitList "\n" (include "ticket-auth-proxy.startProblems" (dict "env" $routeEnv "scope" "route")) -}}
{{- if has . $inherited }}{{ $lines = append $lines . }}{{ else if . }}{{ $lines = append $lines (include "ticket-auth-proxy.inRouteWords" (dict "ctx" $ "line" . "route" $route)) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $lines = concat $lines (splitList "\n" (include "ticket-auth-proxy.routeProblems" (dict "ctx" . "env" $env))) -}}
{{- $problems = without $lines "" | uniq | join "\n" -}}
{{- end -}}
{{- /* Not a configuration problem but a listener that cannot open: the proxy exits at start. */ -}}
{{- $listen := index $env "LISTEN_PORT" | default "8180" -}}
{{- if and (not (hasKey $env "LISTEN_SOCKET")) (eq (toString $listen) (toString (index $env "ADMIN_PORT" | default "8181"))) (ne (toString $listen) "0") -}}
{{- $adminHost := toString (index $env "ADMIN_HOST" | default "0.0.0.0") -}}
{{- if contains ":" $adminHost }}{{ $adminHost = printf "[%s]" $adminHost }}{{ end -}}
{{- $problems = trim (printf "%s\nlistenPort and adminPort are both %s: the admin listener (ADMIN_HOST, ADMIN_PORT) cannot listen on %s:%s (EADDRINUSE); choose two ports" $problems $listen $adminHost $listen) -}}
{{- end -}}
{{- if $problems -}}
{{- $hints := include "ticket-auth-proxy.valueHints" . | fromYaml -}}
{{- $valueOf := include "ticket-auth-proxy.valueOf" . | fromYaml -}}
{{- $extra := list -}}
{{- range (include "ticket-auth-proxy.values" . | fromYaml).extraEnv }}{{ $extra = append $extra .name }}{{ end -}}
{{- $lines := list -}}
{{- range splitList "\n" $problems -}}
{{- $setting := regexFind "^[A-Z_]+" . -}}
{{- $line := . -}}
{{- /* A route's problem names the route and its setting: the values above are not its remedy. */ -}}
{{- $ofRoute := or (hasPrefix "routes" $line) (contains "routes[" $line) -}}
{{- if $ofRoute -}}
{{- else if has $setting $extra -}}
{{- $line = printf "extraEnv: %s" $line -}}
{{- else if hasKey $valueOf $setting -}}
{{- $line = printf "%s: %s" (index $valueOf $setting) $line -}}
{{- end -}}
{{- range $needle, $value := $hints -}}
{{- if and (contains $needle $line) (not $ofRoute) }}{{ $line = printf "%s (in the chart's values: %s)" $line $value }}{{ end -}}
{{- end -}}
{{- $lines = append $lines $line -}}
{{- end -}}
{{- include "ticket-auth-proxy.fail" (printf "ticket-auth-proxy: the proxy would refuse these values at start (exit 2):\n  - %s" (join "\n  - " $lines)) -}}
{{- end -}}
{{- end -}}
