{{/*
Routes (docs/routes.md): several gateways behind one proxy, each with its own credential. The
proxy reads them from its configuration file only, so the chart writes `routes` into a ConfigMap
mounted read-only (CONFIG_FILE); the other values stay in the environment, where they are every
route's defaults. A route's secret is never written into the ConfigMap: it is mounted from its
own Secret as a file of its own, which the route names as clientSecretFile. And the checks the
proxy makes of the routes together (src/config/routes.ts, checkListenerSettings in
src/app/listeners/listener-settings.ts), each naming `routes` and the route in the proxy's words.
*/}}

{{/* Where the configuration file is mounted, and its name there. */}}
{{- define "ticket-auth-proxy.configDir" -}}/etc/ticket-auth-proxy/config{{- end -}}
{{- define "ticket-auth-proxy.configFile" -}}{{ include "ticket-auth-proxy.configDir" . }}/proxy.yaml{{- end -}}

{{/* Where the routes' secrets are mounted, each in a directory of its own named after its route. */}}
{{- define "ticket-auth-proxy.routeSecretsDir" -}}/var/run/secrets/ticket-auth-proxy-routes{{- end -}}

{{/* The ConfigMap of the configuration file, and the Secret the chart creates from the routes' clientSecret values. */}}
{{- define "ticket-auth-proxy.routesName" -}}{{ include "ticket-auth-proxy.fullname" . }}-routes{{- end -}}

{{/* The settings whose values are integers: written in digits, never as a float's 1e+06. */}}
{{- define "ticket-auth-proxy.routeIntegers" -}}
{{- list "listenPort" "tokenWaitTimeoutMs" "tokenFetchTimeoutMs" "upstreamTimeoutMs" "upstreamIdleTimeoutMs" "replayBodyLimitBytes" "tokenDefaultTtlS" | toJson -}}
{{- end -}}

{{/* How a route is reached, as the proxy reads it (wayOf in src/config/load.ts): the first of mount,
     listenPort and listenSocket it gives, or "" for the main listener's paths no mount takes. */}}
{{- define "ticket-auth-proxy.routeWay" -}}
{{- $route := . -}}
{{- $way := "" -}}
{{- range list "mount" "listenPort" "listenSocket" -}}
{{- if and (not $way) (hasKey $route .) (not (kindIs "invalid" (index $route .))) }}{{ $way = . }}{{ end -}}
{{- end -}}
{{- $way -}}
{{- end -}}

{{/* "true" when the route has a client secret of its own: from its existingSecret, or a Secret the chart creates. */}}
{{- define "ticket-auth-proxy.routeOwnSecret" -}}
{{- if or .existingSecret .clientSecret }}true{{ end -}}
{{- end -}}

{{/*
The proxy's configuration file: the routes as the proxy reads them, each route's keys as given
but the chart's own (existingSecret, existingSecretKey, clientSecret), which become its
clientSecretFile.
*/}}
{{- define "ticket-auth-proxy.routesFile" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $integers := include "ticket-auth-proxy.routeIntegers" . | fromJsonArray -}}
# ticket-auth-proxy's configuration file, rendered by its chart: the routes (docs/routes.md). Every
# other setting is in the container's environment, each route's default. No secret is written
# here: a route with a secret of its own reads it from clientSecretFile, mounted from its Secret.
routes:
{{- range $v.routes }}
{{- $route := omit . "name" "existingSecret" "existingSecretKey" "clientSecret" }}
{{- range $integers }}
{{- if and (hasKey $route .) (kindIs "float64" (index $route .)) }}{{ $_ := set $route . (index $route . | int64) }}{{ end }}
{{- end }}
{{- if include "ticket-auth-proxy.routeOwnSecret" . }}
{{- $_ := set $route "clientSecretFile" (printf "%s/%s/client-secret" (include "ticket-auth-proxy.routeSecretsDir" $) .name) }}
{{- end }}
  - {{ dict "name" .name | toYaml }}
    {{- with $route }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
{{- end -}}

{{/* For parent charts (through ticket-auth-proxy.checksum): a pod annotation that changes when the routes do. */}}
{{- define "ticket-auth-proxy.routesChecksum" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- if $v.routes -}}
checksum/ticket-auth-proxy-routes: {{ toJson $v.routes | sha256sum }}
{{- end -}}
{{- end -}}

{{/* CONFIG_FILE as an env entry, with routes. */}}
{{- define "ticket-auth-proxy.routesEnv" -}}
{{- if (include "ticket-auth-proxy.values" . | fromYaml).routes }}
# The routes, from the configuration file the chart renders (docs/routes.md).
- name: CONFIG_FILE
  value: {{ include "ticket-auth-proxy.configFile" . | quote }}
{{- end }}
{{- end -}}

{{/* The read-only mounts of the configuration file and of each route's secret, as volumeMounts entries. */}}
{{- define "ticket-auth-proxy.routesMounts" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- if $v.routes }}
- name: ticket-auth-proxy-config
  mountPath: {{ include "ticket-auth-proxy.configDir" . }}
  readOnly: true
{{- range $v.routes }}
{{- if include "ticket-auth-proxy.routeOwnSecret" . }}
- name: ticket-auth-proxy-route-{{ .name }}-secret
  mountPath: {{ include "ticket-auth-proxy.routeSecretsDir" $ }}/{{ .name }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The volumes behind routesMounts (whole directories, no subPath: a rotated Secret reaches the proxy). */}}
{{- define "ticket-auth-proxy.routesVolumes" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- if $v.routes }}
- name: ticket-auth-proxy-config
  configMap:
    name: {{ include "ticket-auth-proxy.routesName" . }}
    defaultMode: 0444
    items:
      - key: proxy.yaml
        path: proxy.yaml
{{- range $v.routes }}
{{- if include "ticket-auth-proxy.routeOwnSecret" . }}
# The route {{ .name }}'s secret, mounted into the proxy's container only.
- name: ticket-auth-proxy-route-{{ .name }}-secret
  secret:
    secretName: {{ .existingSecret | default (include "ticket-auth-proxy.routesName" $) }}
    defaultMode: 0444
    items:
      - key: {{ if .existingSecret }}{{ .existingSecretKey | default "client-secret" }}{{ else }}{{ .name }}{{ end }}
        path: client-secret
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The routes' own ports, as entries of the container's ports. */}}
{{- define "ticket-auth-proxy.routePorts" -}}
{{- range (include "ticket-auth-proxy.values" . | fromYaml).routes }}
{{- if eq (include "ticket-auth-proxy.routeWay" .) "listenPort" }}
- containerPort: {{ .listenPort | int64 }}
  protocol: TCP
{{- end }}
{{- end }}
{{- end -}}

{{/* For the Service and the NetworkPolicy: each route on a port of its own, as {name, port}, in JSON. */}}
{{- define "ticket-auth-proxy.routeServicePorts" -}}
{{- $ports := list -}}
{{- range (include "ticket-auth-proxy.values" . | fromYaml).routes -}}
{{- if eq (include "ticket-auth-proxy.routeWay" .) "listenPort" -}}
{{- $ports = append $ports (dict "name" (printf "%s-route" .name) "port" (.listenPort | int64)) -}}
{{- end -}}
{{- end -}}
{{- toJson $ports -}}
{{- end -}}

{{/* Every socket of the proxy, the main listener's first, as a JSON list of {who, path}. */}}
{{- define "ticket-auth-proxy.sockets" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $sockets := list -}}
{{- with $v.listenSocket }}{{ $sockets = append $sockets (dict "who" "listenSocket" "path" .) }}{{ end -}}
{{- range $v.routes -}}
{{- if eq (include "ticket-auth-proxy.routeWay" .) "listenSocket" -}}
{{- $sockets = append $sockets (dict "who" (printf "%q's listenSocket" .name) "path" .listenSocket) -}}
{{- end -}}
{{- end -}}
{{- toJson $sockets -}}
{{- end -}}

{{/*
Whether two listeners' hosts take the same port, as the proxy finds it (overlap in
src/app/listeners/listener-settings.ts): the same address; "::", every address of both families;
or 0.0.0.0 beside an IPv4 address. "true" or "".
*/}}
{{- define "ticket-auth-proxy.hostsOverlap" -}}
{{- $a := index . 0 -}}
{{- $b := index . 1 -}}
{{- $every := "^[0:]*:[0:]*$" -}}
{{- $ipv4 := "^[0-9]{1,3}(\\.[0-9]{1,3}){3}$" -}}
{{- if or (eq $a $b) (regexMatch $every $a) (regexMatch $every $b) (and (eq $a "0.0.0.0") (regexMatch $ipv4 $b)) (and (eq $b "0.0.0.0") (regexMatch $ipv4 $a)) }}true{{ end -}}
{{- end -}}

{{/*
What the proxy refuses in the routes together, each problem naming `routes` and the route in
the proxy's words, one per line; and the chart's own refusals of them. Argument: (dict "ctx" $
"env" the container's environment, as in ticket-auth-proxy.validate).
*/}}
{{- define "ticket-auth-proxy.routeProblems" -}}
{{- $v := include "ticket-auth-proxy.values" .ctx | fromYaml -}}
{{- $env := .env -}}
{{- $problems := list -}}
{{- $routes := $v.routes | default list -}}
{{- /* Each route alone: one way in, a gateway (readRoutes and wayOf in src/config/load.ts). */ -}}
{{- range $routes -}}
{{- $route := . -}}
{{- $ways := list -}}
{{- range list "mount" "listenPort" "listenSocket" -}}
{{- if and (hasKey $route .) (not (kindIs "invalid" (index $route .))) }}{{ $ways = append $ways . }}{{ end -}}
{{- end -}}
{{- if gt (len $ways) 1 -}}
{{- $problems = append $problems (printf "routes: %q has %s: a route is reached one way, a mount or a listener of its own" .name (join " and " $ways)) -}}
{{- end -}}
{{- if and .listenSocketMode (not (has "listenSocket" $ways)) -}}
{{- $problems = append $problems (printf "routes: %q has listenSocketMode without listenSocket: the mode is its socket file's" .name) -}}
{{- end -}}
{{- if not (or .baseUrl (index $env "BASE_URL")) -}}
{{- $problems = append $problems (printf "routes: %q has no baseUrl, and none is set at the top level (BASE_URL): name its gateway" .name) -}}
{{- end -}}
{{- end -}}
{{- /* The routes together (routeSetProblems in src/config/routes.ts). */ -}}
{{- $counts := dict -}}
{{- $order := list -}}
{{- range $routes -}}
{{- if not (hasKey $counts .name) }}{{ $order = append $order .name }}{{ end -}}
{{- $_ := set $counts .name (add1 (index $counts .name | default 0)) -}}
{{- end -}}
{{- range $order -}}
{{- if gt (index $counts .) 1 }}{{ $problems = append $problems (printf "routes: the route name %q is given %d times: each route has a name of its own" . (index $counts .)) }}{{ end -}}
{{- end -}}
{{- $main := list -}}
{{- $mounts := list -}}
{{- range $routes -}}
{{- $way := include "ticket-auth-proxy.routeWay" . -}}
{{- if eq $way "mount" }}{{ $mounts = append $mounts (dict "name" .name "mount" .mount) }}
{{- else if eq $way "" }}{{ $main = append $main (printf "%q" .name) }}{{ end -}}
{{- end -}}
{{- if gt (len $main) 1 -}}
{{- $problems = append $problems (printf "routes: %s have no way in of their own: at most one route serves the main listener's paths; give the others a mount, a listenPort or a listenSocket" (join ", " $main)) -}}
{{- end -}}
{{- range $i, $a := $mounts -}}
{{- range $j, $b := $mounts -}}
{{- if and (ne $i $j) (or (eq $a.mount $b.mount) (hasPrefix (printf "%s/" $b.mount) $a.mount)) (not (and (eq $a.mount $b.mount) (lt $i $j))) -}}
{{- if eq $a.mount $b.mount -}}
{{- $problems = append $problems (printf "routes: %q and %q both mount %s: give each route a mount of its own" $b.name $a.name $a.mount) -}}
{{- else -}}
{{- $problems = append $problems (printf "routes: %q mounts %s, inside %q's mount %s: a mount may not lie under another" $a.name $a.mount $b.name $b.mount) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* Their listeners (routeListeners in src/app/listeners/listener-settings.ts): a route's port is
       on the main listener's address, as the chart gives no route a listenHost. */ -}}
{{- $listenHost := index $env "LISTEN_HOST" | default "127.0.0.1" | replace "[" "" | replace "]" "" -}}
{{- $taken := list (dict "who" "ADMIN_PORT (the admin listener)" "host" (index $env "ADMIN_HOST" | default "0.0.0.0" | replace "[" "" | replace "]" "") "port" (index $env "ADMIN_PORT" | default "8181" | toString)) -}}
{{- if not (index $env "LISTEN_SOCKET") -}}
{{- $taken = append $taken (dict "who" "LISTEN_PORT (the main proxy listener)" "host" $listenHost "port" (index $env "LISTEN_PORT" | default "8180" | toString)) -}}
{{- end -}}
{{- $sockets := dict -}}
{{- with index $env "LISTEN_SOCKET" }}{{ $_ := set $sockets . "LISTEN_SOCKET (the main proxy listener)" }}{{ end -}}
{{- range $routes -}}
{{- $name := .name -}}
{{- $way := include "ticket-auth-proxy.routeWay" . -}}
{{- if eq $way "listenPort" -}}
{{- $port := .listenPort | int64 | toString -}}
{{- $clash := "" -}}
{{- range $taken -}}
{{- if and (not $clash) (eq .port $port) (include "ticket-auth-proxy.hostsOverlap" (list .host $listenHost)) }}{{ $clash = .who }}{{ end -}}
{{- end -}}
{{- if $clash }}{{ $problems = append $problems (printf "routes: %q listens on port %s, as %s does: give each route a port of its own" $name $port $clash) }}{{ end -}}
{{- $taken = append $taken (dict "who" (printf "route %q" $name) "host" $listenHost "port" $port) -}}
{{- if and (eq $v.mode "standalone") (eq $port (toString ($v.service.port | int64))) (ne $port (index $env "LISTEN_PORT" | default "8180" | toString)) -}}
{{- $problems = append $problems (printf "routes: %q listens on port %s, the Service's port of the main listener (service.port): give the route another port" $name $port) -}}
{{- end -}}
{{- else if eq $way "listenSocket" -}}
{{- $path := .listenSocket -}}
{{- $label := printf "routes: %q's listenSocket" $name -}}
{{- if gt (len $path) 107 -}}
{{- $problems = append $problems (printf "%s is %d bytes long: a Unix socket path holds at most 107 bytes here; choose a shorter path" $label (len $path)) -}}
{{- else if gt (add (len (dir $path)) 10) 107 -}}
{{- $problems = append $problems (printf "%s's directory is too long: the socket is made in a private directory inside it first (%d bytes in all), and a Unix socket path holds at most 107 bytes here; choose a shorter directory" $label (add (len (dir $path)) 10)) -}}
{{- end -}}
{{- with index $sockets $path }}{{ $problems = append $problems (printf "routes: %q listens on the socket %s, as %s does: give each route a socket of its own" $name $path .) }}{{ end -}}
{{- $_ := set $sockets $path (printf "route %q" $name) -}}
{{- end -}}
{{- end -}}
{{- /* The chart's own: every socket in one directory, the one volume the app mounts. */ -}}
{{- $all := include "ticket-auth-proxy.sockets" .ctx | fromJsonArray -}}
{{- range rest $all -}}
{{- $first := first $all -}}
{{- if ne (dir .path) (dir $first.path) -}}
{{- $problems = append $problems (printf "routes: %s %s is not in %s, the directory of %s: every socket of the sidecar is on the one volume the app mounts there; put it in that directory" .who .path (dir $first.path) $first.who) -}}
{{- end -}}
{{- end -}}
{{- join "\n" $problems -}}
{{- end -}}

{{/* The route settings the chart checks as the proxy's checks of a route read them, by their variables. */}}
{{- define "ticket-auth-proxy.routeSettings" -}}
baseUrl: BASE_URL
tokenUrl: TOKEN_URL
issuerUrl: ISSUER_URL
tokenScope: TOKEN_SCOPE
tokenAuthMethod: TOKEN_AUTH_METHOD
clientId: CLIENT_ID
dpop: DPOP
dpopAlg: DPOP_ALG
passthroughBasic: PASSTHROUGH_BASIC
{{- end -}}

{{/*
The route's own settings that the proxy's checks of a route read (ROUTE_CHECKS in
src/app/settings-checks.ts), as the environment would give them: the route's settings over the
top level's, for ticket-auth-proxy.startProblems. Argument: (dict "ctx" $ "route" the route).
Returns YAML.
*/}}
{{- define "ticket-auth-proxy.routeEnv" -}}
{{- $route := .route -}}
{{- $overlay := dict -}}
{{- range $key, $name := include "ticket-auth-proxy.routeSettings" .ctx | fromYaml -}}
{{- if and (hasKey $route $key) (ne (toString (index $route $key)) "") (not (kindIs "invalid" (index $route $key))) }}{{ $_ := set $overlay $name (toString (index $route $key)) }}{{ end -}}
{{- end -}}
{{- if include "ticket-auth-proxy.routeOwnSecret" $route -}}
{{- $_ := set $overlay "CLIENT_SECRET_FILE" (printf "%s/%s/client-secret" (include "ticket-auth-proxy.routeSecretsDir" .ctx) $route.name) -}}
{{- end -}}
{{- toYaml $overlay -}}
{{- end -}}

{{/* For NOTES.txt: a line per route, where the app calls it and what it forwards where.
     Argument: (dict "ctx" $ "host" the main listener's host "port" its port). */}}
{{- define "ticket-auth-proxy.routeNotes" -}}
{{- $v := .ctx.Values -}}
{{- $main := ternary (printf "the socket %s" $v.listenSocket) (printf "http://%s:%v" .host .port) (and (eq $v.mode "sidecar") (ne $v.listenSocket "")) -}}
{{- range $v.routes }}
{{- $way := include "ticket-auth-proxy.routeWay" . }}
{{- $at := $main }}
{{- if eq $way "mount" }}{{ $at = printf "%s, under %s" $main .mount }}
{{- else if eq $way "listenPort" }}{{ $at = printf "http://%s:%v" $.host (.listenPort | int64) }}
{{- else if eq $way "listenSocket" }}{{ $at = printf "the socket %s" .listenSocket }}{{ end }}
  {{ .name }}: {{ $at }} -> {{ .baseUrl | default $v.baseUrl }} {{ .paths | default (list "/api/v1") | join ", " }}
{{- end }}
{{- end -}}
