{{/*
Named templates. The ones marked "for parent charts" are the sidecar interface: a chart that
lists ticket-auth-proxy as a dependency (without an alias) includes them with its own context,
and they read this chart's values from .Values "ticket-auth-proxy" there.
*/}}

{{/*
Stops the render with a message: the chart's refusal of values that values.schema.json cannot
refuse (the proxy's own checks, a sum, two values that must differ). helm lint turns a `fail`
into a note (level=INFO msg="funcMap fail") and renders on, which would let the lint pass values
that install refuses; there, and only there, `fail` returns, and the include of a template named
by the message stops the lint with it as an error.
*/}}
{{- define "ticket-auth-proxy.fail" -}}
{{- fail . -}}
{{- include (replace "\n" " " .) dict -}}
{{- end -}}

{{/* This chart's values, as YAML: its own, or a parent chart's "ticket-auth-proxy" section. */}}
{{- define "ticket-auth-proxy.values" -}}
{{- $sub := index .Values "ticket-auth-proxy" -}}
{{- if kindIs "map" $sub -}}
{{- toYaml $sub -}}
{{- else -}}
{{- toYaml .Values -}}
{{- end -}}
{{- end -}}

{{/* The same in every context: release name plus chart name, at most 63 characters. */}}
{{- define "ticket-auth-proxy.fullname" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- if $v.fullnameOverride -}}
{{- $v.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "ticket-auth-proxy" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-ticket-auth-proxy" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ticket-auth-proxy.selectorLabels" -}}
app.kubernetes.io/name: ticket-auth-proxy
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ticket-auth-proxy.labels" -}}
{{ include "ticket-auth-proxy.selectorLabels" . }}
app.kubernetes.io/version: {{ include "ticket-auth-proxy.appVersion" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "ticket-auth-proxy-%s" (.Chart.Version | replace "+" "_") }}
{{- end -}}

{{/* "true" when the client proves itself with the pod's projected service-account token. */}}
{{- define "ticket-auth-proxy.secretless" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $sat := ($v.auth | default dict).serviceAccountToken | default dict -}}
{{- if $sat.enabled -}}
{{- if or $v.existingSecret $v.createSecret -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: auth.serviceAccountToken.enabled needs no Secret: unset existingSecret and createSecret (the projected token replaces the client secret)" -}}
{{- end -}}
{{- if not $v.clientId -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: auth.serviceAccountToken.enabled needs clientId (the client the identity provider federates the service account with)" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/* The standalone pods' service account: the created one, or an existing one by name. */}}
{{- define "ticket-auth-proxy.serviceAccountName" -}}
{{- $sa := .Values.serviceAccount | default dict -}}
{{- if $sa.create -}}
{{- $sa.name | default (include "ticket-auth-proxy.fullname" .) -}}
{{- else -}}
{{- $sa.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "ticket-auth-proxy.assertionDir" -}}/var/run/secrets/ticket-auth-proxy/assertion{{- end -}}

{{/* "true" when the container gets the top-level client, from the Secret below: always without
     routes; with routes, only when existingSecret or createSecret names one, every route's default
     (each route may have a secret of its own instead). */}}
{{- define "ticket-auth-proxy.topLevelSecret" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- if or $v.existingSecret $v.createSecret (not $v.routes) }}true{{ end -}}
{{- end -}}

{{/* The Secret holding client-id and client-secret; refuses to render without credentials. */}}
{{- define "ticket-auth-proxy.secretName" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- if $v.existingSecret -}}
{{- $v.existingSecret -}}
{{- else if $v.createSecret -}}
{{- if not (and $v.clientId $v.clientSecret) -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: createSecret needs clientId and clientSecret" -}}
{{- end -}}
{{- include "ticket-auth-proxy.fullname" . -}}
{{- else -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: set existingSecret (a Secret with the keys client-id and client-secret), or createSecret with clientId and clientSecret" -}}
{{- end -}}
{{- end -}}

{{/* For parent charts: a pod annotation that changes when the chart-created Secret does; nothing
     with an existingSecret, whose content the chart does not know. */}}
{{- define "ticket-auth-proxy.checksum" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $lines := list -}}
{{- if $v.createSecret -}}
{{- $lines = append $lines (printf "checksum/ticket-auth-proxy-secret: %s" (printf "%s\n%s\n%v" $v.clientId $v.clientSecret $v.createSecret | sha256sum)) -}}
{{- end -}}
{{- /* The routes' configuration file and the Secret made from their clientSecret values: the
       proxy reads its configuration file at start. */ -}}
{{- with include "ticket-auth-proxy.routesChecksum" . }}{{ $lines = append $lines . }}{{ end -}}
{{- join "\n" $lines -}}
{{- end -}}

{{/* For parent charts: the least terminationGracePeriodSeconds for the proxy to drain. */}}
{{- define "ticket-auth-proxy.terminationGracePeriodSeconds" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $least := add1 (add $v.shutdown.keepServingSeconds $v.shutdown.timeoutS) -}}
{{- if lt (int $v.terminationGracePeriodSeconds) (int $least) -}}
{{- include "ticket-auth-proxy.fail" (printf "ticket-auth-proxy: terminationGracePeriodSeconds (%v) must exceed shutdown.keepServingSeconds + shutdown.timeoutS (%v)" $v.terminationGracePeriodSeconds (sub $least 1)) -}}
{{- end -}}
{{- $v.terminationGracePeriodSeconds -}}
{{- end -}}

{{/* This chart's appVersion, also from a parent chart's context (where .Chart is the parent). */}}
{{- define "ticket-auth-proxy.appVersion" -}}
{{- $sub := and .Subcharts (index .Subcharts "ticket-auth-proxy") -}}
{{- if $sub -}}
{{- $sub.Chart.AppVersion -}}
{{- else -}}
{{- .Chart.AppVersion -}}
{{- end -}}
{{- end -}}

{{/* Where the client secret is mounted. */}}
{{- define "ticket-auth-proxy.secretDir" -}}/var/run/secrets/ticket-auth-proxy{{- end -}}

{{/*
The proxy container. Arguments: (dict "ctx" $ "role" "standalone"|"native"|"classic").
*/}}
{{- define "ticket-auth-proxy.container" -}}
{{- $ctx := .ctx -}}
{{- $role := .role -}}
{{- if not .validating }}{{ include "ticket-auth-proxy.validate" $ctx }}{{ end -}}
{{- $v := include "ticket-auth-proxy.values" $ctx | fromYaml -}}
{{- $keepServing := int $v.shutdown.keepServingSeconds -}}
{{- if eq $role "native" }}{{ $keepServing = 0 }}{{ end -}}
{{- $preStopSleep := and (gt $keepServing 0) (semverCompare ">=1.30.0-0" $ctx.Capabilities.KubeVersion.Version) -}}
{{- $image := printf "%s:%s" $v.image.repository ($v.image.tag | default (include "ticket-auth-proxy.appVersion" $ctx)) -}}
{{- if $v.image.digest }}{{ $image = printf "%s@%s" $v.image.repository $v.image.digest }}{{ end -}}
name: ticket-auth-proxy
image: {{ $image | quote }}
imagePullPolicy: {{ $v.image.pullPolicy }}
{{- if eq $role "native" }}
# A native sidecar: started before the app's containers, stopped after them.
restartPolicy: Always
{{- end }}
ports:
  {{- if not $v.listenSocket }}
  - name: proxy
    containerPort: {{ $v.listenPort }}
    protocol: TCP
  {{- end }}
  - name: admin
    containerPort: {{ $v.adminPort }}
    protocol: TCP
  {{- with include "ticket-auth-proxy.routePorts" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
env:
  {{- if or $v.baseUrl (not $v.routes) }}
  - name: BASE_URL
    value: {{ $v.baseUrl | quote }}
  {{- end }}
  {{- with $v.tokenUrl }}
  - name: TOKEN_URL
    value: {{ . | quote }}
  {{- end }}
  {{- with $v.issuerUrl }}
  - name: ISSUER_URL
    value: {{ . | quote }}
  {{- end }}
  {{- if $v.allowInsecureHttp }}
  - name: ALLOW_INSECURE_HTTP
    value: "true"
  {{- end }}
  {{- with $v.tokenScope }}
  - name: TOKEN_SCOPE
    value: {{ . | quote }}
  {{- end }}
  {{- if include "ticket-auth-proxy.secretless" $ctx }}
  # Secretless: the projected service-account token is the client assertion, read afresh for
  # every token request, so the kubelet's rotation needs no restart.
  - name: TOKEN_AUTH_METHOD
    value: "client_assertion_file"
  - name: CLIENT_ID
    value: {{ $v.clientId | quote }}
  - name: CLIENT_ASSERTION_FILE
    value: {{ include "ticket-auth-proxy.assertionDir" $ctx }}/token
  {{- with $v.auth.serviceAccountToken.clientAssertionType }}
  - name: CLIENT_ASSERTION_TYPE
    value: {{ . | quote }}
  {{- end }}
  {{- else }}
  - name: TOKEN_AUTH_METHOD
    value: {{ $v.tokenAuthMethod | quote }}
  {{- if include "ticket-auth-proxy.topLevelSecret" $ctx }}
  - name: CLIENT_ID
    valueFrom:
      secretKeyRef:
        name: {{ include "ticket-auth-proxy.secretName" $ctx }}
        key: client-id
  # The secret as a file: a rotated Secret reaches the proxy without a restart.
  - name: CLIENT_SECRET_FILE
    value: {{ include "ticket-auth-proxy.secretDir" $ctx }}/client-secret
  {{- end }}
  {{- end }}
  {{- if $v.listenSocket }}
  # A socket in a volume only the app's container shares: no other container of the pod can
  # reach the credentials, as every one could on the pod's loopback.
  - name: LISTEN_SOCKET
    value: {{ $v.listenSocket | quote }}
  - name: LISTEN_SOCKET_MODE
    value: {{ $v.listenSocketMode | default "0660" | quote }}
  {{- else }}
  # "::" takes IPv6 and IPv4 alike, so the Service (standalone) and the kubelet's probes reach the
  # proxy on IPv4, IPv6-only and dual-stack clusters; where a node has no IPv6 the proxy falls
  # back to 0.0.0.0 and says so. The sidecar's proxy listener stays on the pod's loopback.
  - name: LISTEN_HOST
    value: {{ if eq $role "standalone" }}"::"{{ else }}"127.0.0.1"{{ end }}
  - name: LISTEN_PORT
    value: {{ $v.listenPort | quote }}
  {{- end }}
  {{- if ne $role "standalone" }}
  # A sidecar's readiness is its pod's: once the first token is held, an identity-provider
  # outage does not take the app out of its Service (requests get 503 token_unavailable).
  - name: READINESS
    value: "started"
  {{- end }}
  - name: ADMIN_HOST
    value: "::"
  - name: ADMIN_PORT
    value: {{ $v.adminPort | quote }}
  - name: LOG_LEVEL
    value: {{ $v.logLevel | quote }}
  - name: ACCESS_LOG
    value: {{ $v.accessLog | quote }}
  - name: METRICS_RUNTIME
    value: {{ $v.metricsRuntime | quote }}
  - name: SHUTDOWN_DELAY_S
    value: {{ if $preStopSleep }}"0"{{ else }}{{ $keepServing | quote }}{{ end }}
  - name: SHUTDOWN_TIMEOUT_S
    value: {{ $v.shutdown.timeoutS | quote }}
  {{- with include "ticket-auth-proxy.networkEnv" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with include "ticket-auth-proxy.dpopEnv" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with include "ticket-auth-proxy.tokenStoreEnv" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with include "ticket-auth-proxy.tracingEnv" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with include "ticket-auth-proxy.routesEnv" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with $v.nodeOptions }}
  - name: NODE_OPTIONS
    value: {{ . | quote }}
  {{- end }}
  {{- if dig "limits" "memory" "" ($v.resources | default dict) }}
  # The container's memory limit, which the proxy sheds new requests near (docs/operations.md,
  # "When memory runs short"); without a limit the proxy reads its cgroup and finds none.
  - name: MEMORY_LIMIT_MB
    valueFrom:
      resourceFieldRef:
        resource: limits.memory
        divisor: 1Mi
  {{- end }}
  {{- with $v.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
volumeMounts:
  {{- if include "ticket-auth-proxy.secretless" $ctx }}
  - name: ticket-auth-proxy-assertion
    mountPath: {{ include "ticket-auth-proxy.assertionDir" $ctx }}
    readOnly: true
  {{- else if include "ticket-auth-proxy.topLevelSecret" $ctx }}
  - name: ticket-auth-proxy-credentials
    mountPath: {{ include "ticket-auth-proxy.secretDir" $ctx }}
    readOnly: true
  {{- end }}
  {{- with include "ticket-auth-proxy.networkMounts" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with include "ticket-auth-proxy.dpopMounts" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with include "ticket-auth-proxy.tokenStoreMounts" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with include "ticket-auth-proxy.routesMounts" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with include "ticket-auth-proxy.sidecarSocketMount" $ctx | trim }}
  {{- . | nindent 2 }}
  {{- end }}
{{- if $preStopSleep }}
lifecycle:
  preStop:
    # Keeps serving while the endpoints update and the app finishes; no shell needed.
    sleep:
      seconds: {{ $keepServing }}
{{- end }}
{{- if eq $role "standalone" }}
startupProbe:
  httpGet:
    path: /livez
    port: admin
  periodSeconds: 1
  failureThreshold: 30
{{- else }}
# Started once the first token is held (READINESS=started): a native sidecar's app starts then.
# Five minutes for an identity provider that is down as the pod starts, before a restart.
startupProbe:
  httpGet:
    path: /readyz
    port: admin
  periodSeconds: 1
  failureThreshold: 300
{{- end }}
livenessProbe:
  httpGet:
    path: /livez
    port: admin
  periodSeconds: 10
  # Long enough that a full garbage collection (the heap is compacted when shedding starts) or a
  # CPU-starved node delays an answer without failing it: a restart cuts every request in flight.
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: admin
  periodSeconds: 5
  timeoutSeconds: 2
  failureThreshold: 2
resources:
  {{- toYaml $v.resources | nindent 2 }}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  readOnlyRootFilesystem: true
  allowPrivilegeEscalation: false
  capabilities:
    drop: [ALL]
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{/*
For parent charts: the proxy as one entry of a pod's containers list: under initContainers
(native, the default) or containers (sidecar.native: false). Usage:
  initContainers:
    {{- include "ticket-auth-proxy.sidecarContainer" . | nindent 4 }}
*/}}
{{- define "ticket-auth-proxy.sidecarContainer" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $role := ternary "native" "classic" $v.sidecar.native -}}
- {{ include "ticket-auth-proxy.container" (dict "ctx" . "role" $role) | nindent 2 | trim }}
{{- end -}}

{{/* For parent charts: whether the sidecar goes under initContainers ("true") or containers. */}}
{{- define "ticket-auth-proxy.sidecarIsNative" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- ternary "true" "false" $v.sidecar.native -}}
{{- end -}}

{{/* For parent charts: the base URL the app calls the sidecar at, on the pod's loopback; with
     listenSocket, the URL a client that speaks HTTP over the socket uses (its host names nothing). */}}
{{- define "ticket-auth-proxy.sidecarUrl" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- if $v.listenSocket -}}
http://localhost
{{- else -}}
http://127.0.0.1:{{ $v.listenPort }}
{{- end -}}
{{- end -}}

{{/* For parent charts: the socket's path with listenSocket, else nothing. */}}
{{- define "ticket-auth-proxy.sidecarSocket" -}}
{{- (include "ticket-auth-proxy.values" . | fromYaml).listenSocket -}}
{{- end -}}

{{/* The directory of listenSocket (or of the routes' sockets, without one), where its volume is
     mounted; refuses one the chart mounts another volume at. */}}
{{- define "ticket-auth-proxy.socketDir" -}}
{{- $socket := first (include "ticket-auth-proxy.sockets" . | fromJsonArray) -}}
{{- $dir := dir $socket.path -}}
{{- range list (include "ticket-auth-proxy.secretDir" .) (include "ticket-auth-proxy.assertionDir" .) (include "ticket-auth-proxy.caDir" .) (include "ticket-auth-proxy.clientCertDir" .) (include "ticket-auth-proxy.dpopDir" .) (include "ticket-auth-proxy.tokenStoreDir" .) (include "ticket-auth-proxy.configDir" .) (include "ticket-auth-proxy.routeSecretsDir" .) -}}
{{- if or (eq $dir .) (hasPrefix (printf "%s/" $dir) .) (hasPrefix (printf "%s/" .) $dir) -}}
{{- include "ticket-auth-proxy.fail" (printf "ticket-auth-proxy: %s's directory %s overlaps %s, where the chart mounts another volume: choose a directory of its own, such as /var/run/ticket-auth-proxy" (ternary "listenSocket" (printf "routes: %s" $socket.who) (eq $socket.who "listenSocket")) $dir .) -}}
{{- end -}}
{{- end -}}
{{- $dir -}}
{{- end -}}

{{/*
For parent charts: with listenSocket, or a route on a socket, the app container's volumeMounts
entry for the sockets' directory (the sidecar mounts the same volume there); nothing without. Usage:
  volumeMounts:
    {{- include "ticket-auth-proxy.sidecarSocketMount" . | nindent 4 }}
*/}}
{{- define "ticket-auth-proxy.sidecarSocketMount" -}}
{{- if include "ticket-auth-proxy.sockets" . | fromJsonArray -}}
- name: ticket-auth-proxy-socket
  mountPath: {{ include "ticket-auth-proxy.socketDir" . }}
{{- end -}}
{{- end -}}

{{/* For parent charts: the volumes the sidecar mounts, as entries of a pod's volumes list. */}}
{{- define "ticket-auth-proxy.sidecarVolumes" -}}
{{- include "ticket-auth-proxy.volumeEntries" . | trim -}}
{{- end -}}

{{- define "ticket-auth-proxy.volumeEntries" -}}
{{- if include "ticket-auth-proxy.secretless" . }}
{{- $sat := (include "ticket-auth-proxy.values" . | fromYaml).auth.serviceAccountToken }}
- name: ticket-auth-proxy-assertion
  projected:
    defaultMode: 0444
    sources:
      - serviceAccountToken:
          audience: {{ $sat.audience | quote }}
          expirationSeconds: {{ int ($sat.expirationSeconds | default 3600) }}
          path: token
{{- else if include "ticket-auth-proxy.topLevelSecret" . }}
- name: ticket-auth-proxy-credentials
  secret:
    secretName: {{ include "ticket-auth-proxy.secretName" . }}
    # Mounted into the proxy's container only.
    defaultMode: 0444
    items:
      - key: client-secret
        path: client-secret
{{- end }}
{{- include "ticket-auth-proxy.networkVolumes" . }}
{{- include "ticket-auth-proxy.dpopVolumes" . }}
{{- include "ticket-auth-proxy.tokenStoreVolumes" . }}
{{- include "ticket-auth-proxy.routesVolumes" . }}
{{- if include "ticket-auth-proxy.sockets" . | fromJsonArray }}
# The socket's directory, shared by the proxy and the app's container alone; the pod's fsGroup
# owns it, so a 0660 socket opens to the app's user.
- name: ticket-auth-proxy-socket
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
{{- end }}
{{- end -}}

{{/* Where the CA and the client certificate are mounted. */}}
{{- define "ticket-auth-proxy.caDir" -}}/etc/ticket-auth-proxy/ca{{- end -}}
{{- define "ticket-auth-proxy.clientCertDir" -}}/etc/ticket-auth-proxy/client{{- end -}}

{{/* The TLS and egress proxy settings (docs/networks-and-authentication.md), as env entries. */}}
{{- define "ticket-auth-proxy.networkEnv" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $tls := $v.tls | default dict -}}
{{- $egress := $v.egressProxy | default dict -}}
{{- if and $tls.caSecret $tls.caConfigMap -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: set tls.caSecret or tls.caConfigMap, not both" -}}
{{- end -}}
{{- if or $tls.caSecret $tls.caConfigMap }}
- name: CA_FILE
  value: {{ printf "%s/%s" (include "ticket-auth-proxy.caDir" .) ($tls.caKey | default "ca.crt") | quote }}
{{- end }}
{{- if $tls.clientCertSecret }}
- name: TLS_CLIENT_CERT_FILE
  value: {{ printf "%s/tls.crt" (include "ticket-auth-proxy.clientCertDir" .) | quote }}
- name: TLS_CLIENT_KEY_FILE
  value: {{ printf "%s/tls.key" (include "ticket-auth-proxy.clientCertDir" .) | quote }}
{{- end }}
{{- range $key := list "httpsProxy" "httpProxy" -}}
{{- if contains "@" (index $egress $key | default "") -}}
{{- include "ticket-auth-proxy.fail" (printf "ticket-auth-proxy: egressProxy.%s carries credentials in plain values: put the URL with them in a Secret and name it in egressProxy.existingSecret" $key) -}}
{{- end -}}
{{- end -}}
{{- if $egress.existingSecret }}
{{- if or $egress.httpsProxy $egress.httpProxy -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: set egressProxy.existingSecret or egressProxy.httpsProxy/httpProxy, not both" -}}
{{- end }}
- name: HTTPS_PROXY
  valueFrom:
    secretKeyRef:
      name: {{ $egress.existingSecret }}
      key: {{ $egress.httpsProxyKey | default "https-proxy" }}
      optional: true
- name: HTTP_PROXY
  valueFrom:
    secretKeyRef:
      name: {{ $egress.existingSecret }}
      key: {{ $egress.httpProxyKey | default "http-proxy" }}
      optional: true
{{- end }}
{{- with $egress.httpsProxy }}
- name: HTTPS_PROXY
  value: {{ . | quote }}
{{- end }}
{{- with $egress.httpProxy }}
- name: HTTP_PROXY
  value: {{ . | quote }}
{{- end }}
{{- with $egress.noProxy }}
- name: NO_PROXY
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Read-only mounts of the CA and the client certificate, as volumeMounts entries. */}}
{{- define "ticket-auth-proxy.networkMounts" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $tls := $v.tls | default dict -}}
{{- if or $tls.caSecret $tls.caConfigMap }}
- name: ticket-auth-proxy-ca
  mountPath: {{ include "ticket-auth-proxy.caDir" . }}
  readOnly: true
{{- end }}
{{- if $tls.clientCertSecret }}
- name: ticket-auth-proxy-client-cert
  mountPath: {{ include "ticket-auth-proxy.clientCertDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* The volumes behind networkMounts, as entries of a pod's volumes list (whole-directory
mounts, no subPath: the kubelet's updates of the Secret reach the proxy). */}}
{{- define "ticket-auth-proxy.networkVolumes" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $tls := $v.tls | default dict -}}
{{- if $tls.caSecret }}
- name: ticket-auth-proxy-ca
  secret:
    secretName: {{ $tls.caSecret }}
    defaultMode: 0444
    items:
      - key: {{ $tls.caKey | default "ca.crt" }}
        path: {{ $tls.caKey | default "ca.crt" }}
{{- else if $tls.caConfigMap }}
- name: ticket-auth-proxy-ca
  configMap:
    name: {{ $tls.caConfigMap }}
    defaultMode: 0444
    items:
      - key: {{ $tls.caKey | default "ca.crt" }}
        path: {{ $tls.caKey | default "ca.crt" }}
{{- end }}
{{- if $tls.clientCertSecret }}
- name: ticket-auth-proxy-client-cert
  secret:
    secretName: {{ $tls.clientCertSecret }}
    # The proxy runs as a non-root user without fsGroup: the files must be readable by it.
    defaultMode: 0444
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
{{- end }}
{{- end -}}


{{/* DPoP (docs/networks-and-authentication.md, "DPoP with Helm"): the key from an existing Secret, or generated by the proxy at start. */}}
{{- define "ticket-auth-proxy.dpopDir" -}}/etc/ticket-auth-proxy/dpop{{- end -}}

{{/* dpop.mode as the proxy's DPOP value; anything but off, on or required stops the render. */}}
{{- define "ticket-auth-proxy.dpopMode" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $dpop := $v.dpop | default dict -}}
{{- $mode := $dpop.mode -}}
{{- if not (hasKey $dpop "mode") -}}
off
{{- else if kindIs "bool" $mode -}}
{{- include "ticket-auth-proxy.fail" (printf "ticket-auth-proxy: dpop.mode must be \"off\", \"on\" or \"required\" (got the boolean %v: YAML reads a bare %s as a boolean; write the word in quotes, e.g. mode: \"%s\")" $mode (ternary "on, yes or true" "off, no or false" $mode) (ternary "on" "off" $mode)) -}}
{{- else if has (toString $mode) (list "off" "on" "required") -}}
{{- $mode -}}
{{- else -}}
{{- include "ticket-auth-proxy.fail" (printf "ticket-auth-proxy: dpop.mode must be \"off\", \"on\" or \"required\" (got %q)" (toString $mode)) -}}
{{- end -}}
{{- end -}}

{{/* The DPoP settings as env entries: DPOP when not off, the mounted key file, the algorithm. */}}
{{- define "ticket-auth-proxy.dpopEnv" -}}
{{- $v := include "ticket-auth-proxy.values" . | fromYaml -}}
{{- $dpop := $v.dpop | default dict -}}
{{- $mode := include "ticket-auth-proxy.dpopMode" . -}}
{{- if ne $mode "off" }}
- name: DPOP
  value: {{ $mode | quote }}
{{- end }}
{{- if $dpop.existingSecret }}
# The key as a file: a rotated Secret reaches the proxy without a restart.
- name: DPOP_KEY_FILE
  value: {{ printf "%s/%s" (include "ticket-auth-proxy.dpopDir" .) ($dpop.existingSecretKey | default "dpop-key.pem") | quote }}
{{- end }}
{{- with $dpop.alg }}
- name: DPOP_ALG
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The read-only mount of the DPoP key, as a volumeMounts entry. */}}
{{- define "ticket-auth-proxy.dpopMounts" -}}
{{- $dpop := (include "ticket-auth-proxy.values" . | fromYaml).dpop | default dict -}}
{{- if $dpop.existingSecret }}
- name: ticket-auth-proxy-dpop-key
  mountPath: {{ include "ticket-auth-proxy.dpopDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* The volume behind dpopMounts (the whole directory, no subPath, so a rotation reaches the proxy). */}}
{{- define "ticket-auth-proxy.dpopVolumes" -}}
{{- $dpop := (include "ticket-auth-proxy.values" . | fromYaml).dpop | default dict -}}
{{- if $dpop.existingSecret }}
- name: ticket-auth-proxy-dpop-key
  secret:
    secretName: {{ $dpop.existingSecret }}
    # The proxy runs as a non-root user without fsGroup: the file must be readable by it. The
    # volume is mounted into the proxy's container only.
    defaultMode: 0444
    items:
      - key: {{ $dpop.existingSecretKey | default "dpop-key.pem" }}
        path: {{ $dpop.existingSecretKey | default "dpop-key.pem" }}
{{- end }}
{{- end -}}
