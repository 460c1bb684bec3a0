{{/*
The shared token store (docs/token-store.md): every pod of a credential shares
one token through a Redis or Valkey. Its settings as env entries, its password and key files from
an existing Secret (mounted as a directory, so a rotation reaches the proxy), the NetworkPolicy's
egress rule to it, and the checks the proxy makes of TOKEN_STORE_* at start (src/store/settings.ts,
src/store/redis-url.ts).
*/}}

{{- define "ticket-auth-proxy.tokenStoreDir" -}}/etc/ticket-auth-proxy/token-store{{- end -}}

{{/* tokenStore as env entries; nothing without tokenStore.url (the proxy refuses TOKEN_STORE_* without it). */}}
{{- define "ticket-auth-proxy.tokenStoreEnv" -}}
{{- $store := (include "ticket-auth-proxy.values" . | fromYaml).tokenStore | default dict -}}
{{- if and $store.existingSecret (not $store.url) -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: tokenStore.existingSecret is set without tokenStore.url: set the store's URL to share tokens through it, or remove the Secret" -}}
{{- end -}}
{{- /* Values are kept in clear in the release's history: a password written into the URL is
       refused, though the proxy would take it. A URL's user information is found as the proxy
       finds it, up to its last "@" (storeUrlList), so an unencoded "/" or "," in a password
       does not hide it. */ -}}
{{- $userinfos := (include "ticket-auth-proxy.storeUrlList" (dict "value" ($store.url | default "") "mode" "cluster") | fromYaml).userinfos -}}
{{- range $userinfos -}}
{{- if contains ":" . -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: tokenStore.url holds a password: keep it in the Secret named by tokenStore.existingSecret (key tokenStore.passwordKey) and write the URL without it (rediss://user@host:6379)" -}}
{{- end -}}
{{- end -}}
{{- if $store.url }}
- name: TOKEN_STORE_URL
  value: {{ $store.url | quote }}
- name: TOKEN_STORE_MODE
  value: {{ $store.mode | default "standalone" | quote }}
{{- if and $store.existingSecret $store.passwordKey }}
# The password as a file: a rotated Secret reaches the proxy without a restart.
- name: TOKEN_STORE_PASSWORD_FILE
  value: {{ printf "%s/%s" (include "ticket-auth-proxy.tokenStoreDir" .) $store.passwordKey | quote }}
{{- end }}
{{- if and $store.existingSecret $store.keyFileKey }}
- name: TOKEN_STORE_KEY_FILE
  value: {{ printf "%s/%s" (include "ticket-auth-proxy.tokenStoreDir" .) $store.keyFileKey | quote }}
{{- end }}
{{- with $store.prefix }}
- name: TOKEN_STORE_PREFIX
  value: {{ . | quote }}
{{- end }}
{{- with $store.timeoutMs }}
- name: TOKEN_STORE_TIMEOUT_MS
  {{- /* An integer by the schema: written in digits, never as a float's 1e+06. */}}
  value: {{ . | int64 | quote }}
{{- end }}
{{- with $store.scripts }}
- name: TOKEN_STORE_SCRIPTS
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The read-only mount of the store's Secret, as a volumeMounts entry. */}}
{{- define "ticket-auth-proxy.tokenStoreMounts" -}}
{{- $store := (include "ticket-auth-proxy.values" . | fromYaml).tokenStore | default dict -}}
{{- if and $store.url $store.existingSecret }}
- name: ticket-auth-proxy-token-store
  mountPath: {{ include "ticket-auth-proxy.tokenStoreDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* The volume behind tokenStoreMounts: the password and the key material, nothing else of the Secret. */}}
{{- define "ticket-auth-proxy.tokenStoreVolumes" -}}
{{- $store := (include "ticket-auth-proxy.values" . | fromYaml).tokenStore | default dict -}}
{{- if and $store.url $store.existingSecret }}
- name: ticket-auth-proxy-token-store
  secret:
    secretName: {{ $store.existingSecret }}
    # The proxy runs as a non-root user without fsGroup: the files must be readable by it. The
    # volume is mounted into the proxy's container only.
    defaultMode: 0444
    items:
      {{- range compact (list $store.passwordKey $store.keyFileKey) }}
      - key: {{ . }}
        path: {{ . }}
      {{- end }}
{{- end }}
{{- end -}}

{{/*
The NetworkPolicy's egress rule to the store, when networkPolicy.egress makes egress an allow-list:
the peers of tokenStore.networkPolicyTo on the port of every URL of tokenStore.url (6379 when none
is written). A store without its peers would be unreachable: the render stops, naming the value.
*/}}
{{- define "ticket-auth-proxy.tokenStoreEgress" -}}
{{- $store := .Values.tokenStore | default dict -}}
{{- if $store.url -}}
{{- if not $store.networkPolicyTo -}}
{{- include "ticket-auth-proxy.fail" "ticket-auth-proxy: tokenStore.networkPolicyTo is required with tokenStore.url while networkPolicy.egress restricts the pods' egress: the NetworkPolicy peers the store is reached at (a namespaceSelector and podSelector for a Redis in the cluster, an ipBlock for a managed one), or the proxy cannot reach its store" -}}
{{- end -}}
{{- $ports := list -}}
{{- range (include "ticket-auth-proxy.storeUrlList" (dict "value" $store.url "mode" ($store.mode | default "standalone")) | fromYaml).urls -}}
{{- $authority := regexReplaceAll "^[A-Za-z][A-Za-z0-9+.-]*://([\\s\\S]*@)?([^/?#]*)[\\s\\S]*$" . "${2}" -}}
{{- $port := regexFind ":[0-9]+$" $authority | trimPrefix ":" | default "6379" -}}
{{- $ports = append $ports $port -}}
{{- end }}
# The token store, on the port of each of its URLs.
- to:
    {{- toYaml $store.networkPolicyTo | nindent 4 }}
  ports:
    {{- range uniq $ports }}
    - port: {{ int . }}
      protocol: TCP
    {{- end }}
{{- end -}}
{{- end -}}

{{/*
TOKEN_STORE_URL as written, read as readList in src/store/redis-url.ts reads it, before anything is
split or shown: each URL's user information runs to the last "@" before the next URL's scheme (a
password may hold an "@"); a comma after that "@" separates seed nodes, one before it is the
password's. Argument: (dict "value" "mode"). Returns YAML {urls, unencoded, shown, userinfos}:
the URLs, trimmed; the characters their user information holds unencoded ("/", "?", "#", a "%"
that decodes nothing, and in cluster mode ","), in that order; the whole value as a message shows
it, every URL's user information hidden; and each URL's user information, for the checks that
need it (never shown).
*/}}
{{- define "ticket-auth-proxy.storeUrlList" -}}
{{- $urls := list -}}
{{- $userinfos := list -}}
{{- $shown := list -}}
{{- $found := dict -}}
{{- range splitList "\x00" (regexReplaceAll "(?i),(\\s*[a-z][a-z0-9+.-]*://)" .value "\x00${1}") -}}
{{- $chunk := trim . -}}
{{- $shown = append $shown (include "ticket-auth-proxy.withoutUserinfo" $chunk) -}}
{{- $start := len (regexFind "(?i)^[a-z][a-z0-9+.-]*:/+" $chunk) -}}
{{- $upToAt := regexFind "^[\\s\\S]*@" $chunk -}}
{{- $hostAt := ternary (len $upToAt) $start (ne $upToAt "") -}}
{{- $userinfo := ternary (substr $start (int (sub (len $upToAt) 1)) $chunk) "" (gt (len $upToAt) $start) -}}
{{- $pieces := splitList "," (substr $hostAt (len $chunk) $chunk) -}}
{{- $urls = append $urls (trim (printf "%s%s" (substr 0 $hostAt $chunk) (first $pieces))) -}}
{{- $userinfos = append $userinfos $userinfo -}}
{{- range rest $pieces }}{{ $urls = append $urls (trim .) }}{{ $userinfos = append $userinfos "" }}{{ end -}}
{{- range list "/" "?" "#" -}}
{{- if contains . $userinfo }}{{ $_ := set $found . true }}{{ end -}}
{{- end -}}
{{- if and (eq $.mode "cluster") (contains "," $userinfo) }}{{ $_ := set $found "," true }}{{ end -}}
{{- if not (include "ticket-auth-proxy.decodes" $userinfo) }}{{ $_ := set $found "%" true }}{{ end -}}
{{- end -}}
{{- $unencoded := list -}}
{{- range list "/" "?" "#" "%" "," }}{{ if hasKey $found . }}{{ $unencoded = append $unencoded . }}{{ end }}{{ end -}}
{{- dict "urls" $urls "userinfos" $userinfos "unencoded" $unencoded "shown" (join "," $shown) | toYaml -}}
{{- end -}}

{{/*
The proxy's checks of TOKEN_STORE_* (checkStoreSettings and parseStoreUrl), on the container's
environment ("env"), as newline-separated problems with the proxy's messages. The files (password,
key material) cannot be read here and are left to the proxy.
*/}}
{{- define "ticket-auth-proxy.tokenStoreProblems" -}}
{{- $env := .env -}}
{{- $problems := list -}}
{{- /* Set: a value, or one from a Secret (nil here, not checked). */ -}}
{{- $given := dict -}}
{{- range $name, $value := $env -}}
{{- if or (kindIs "invalid" $value) (ne (toString $value) "") }}{{ $_ := set $given $name true }}{{ end -}}
{{- end -}}
{{- $url := toString (index $env "TOKEN_STORE_URL" | default "") -}}
{{- if not (hasKey $given "TOKEN_STORE_URL") -}}
{{- range list "TOKEN_STORE_MODE" "TOKEN_STORE_PASSWORD_FILE" "TOKEN_STORE_KEY_FILE" "TOKEN_STORE_PREFIX" "TOKEN_STORE_TIMEOUT_MS" "TOKEN_STORE_SCRIPTS" -}}
{{- if hasKey $given . }}{{ $problems = append $problems (printf "%s is set without TOKEN_STORE_URL: set TOKEN_STORE_URL to share tokens through a store, or remove it" .) }}{{ end -}}
{{- end -}}
{{- else if $url -}}
{{- $mode := toString (index $env "TOKEN_STORE_MODE" | default "standalone") -}}
{{- $list := include "ticket-auth-proxy.storeUrlList" (dict "value" $url "mode" $mode) | fromYaml -}}
{{- $user := "" -}}
{{- $urlPassword := false -}}
{{- $encoded := dict "/" "%2F" "?" "%3F" "#" "%23" "%" "%25" "," "%2C" -}}
{{- if $list.unencoded -}}
{{- $named := list -}}
{{- $how := list -}}
{{- range $list.unencoded }}{{ $named = append $named (printf "%q" .) }}{{ $how = append $how (printf "%q as %s" . (index $encoded .)) }}{{ end -}}
{{- $comma := ternary "; with TOKEN_STORE_MODE=cluster a comma separates the seed nodes" "" (has "," $list.unencoded) -}}
{{- $problems = append $problems (printf "TOKEN_STORE_URL has an unencoded %s in its user information, before the \"@\" (got %q)%s: percent-encode %s in the user name or password (%s), or keep the password in TOKEN_STORE_PASSWORD_FILE and leave it out of the URL" (join " and " $named) $list.shown $comma (ternary "each" "it" (gt (len $list.unencoded) 1)) (join ", " $how)) -}}
{{- else if and (eq $mode "standalone") (gt (len $list.urls) 1) -}}
{{- $problems = append $problems "TOKEN_STORE_URL names one server; a list of seed nodes needs TOKEN_STORE_MODE=cluster" -}}
{{- else -}}
{{- $urlProblems := list -}}
{{- range $list.urls -}}
{{- $part := . -}}
{{- $shown := include "ticket-auth-proxy.withoutUserinfo" $part | quote -}}
{{- $scheme := lower (regexFind "^[A-Za-z][A-Za-z0-9+.-]*:" $part | trimSuffix ":") -}}
{{- /* The URL after its user information: scheme://host[:port][/path][?query][#fragment]. */ -}}
{{- $bare := regexReplaceAll "^[A-Za-z][A-Za-z0-9+.-]*://([\\s\\S]*@)?" $part (printf "%s://" $scheme) -}}
{{- $re := "^[a-z]+://(\\[[0-9A-Fa-f:.]+\\]|[^/:@\\s\\[\\]?#<>\\\\^|]*)(:([0-9]*))?([/?#][^\\s]*)?$" -}}
{{- $parsable := and (regexMatch $re $bare) (le (atoi (regexReplaceAll $re $bare "${3}")) 65535) -}}
{{- $host := ternary (regexReplaceAll $re $bare "${1}") "" $parsable -}}
{{- $tail := ternary (regexReplaceAll $re $bare "${4}") "" $parsable -}}
{{- $path := regexReplaceAll "[?#][\\s\\S]*$" $tail "" -}}
{{- if not $scheme -}}
{{- $urlProblems = append $urlProblems (printf "TOKEN_STORE_URL must be a URL such as redis://redis.example.com:6379 or rediss://... for TLS (got %s)" $shown) -}}
{{- else if not (has $scheme (list "redis" "rediss")) -}}
{{- $urlProblems = append $urlProblems (printf "TOKEN_STORE_URL must begin with redis:// or rediss:// (got %s)" $shown) -}}
{{- else if and (hasPrefix (printf "%s://" $scheme) (lower $part)) (not $parsable) -}}
{{- $urlProblems = append $urlProblems (printf "TOKEN_STORE_URL must be a URL such as redis://redis.example.com:6379 or rediss://... for TLS (got %s)" $shown) -}}
{{- else if not $host -}}
{{- $urlProblems = append $urlProblems (printf "TOKEN_STORE_URL must name a host (got %s)" $shown) -}}
{{- else if or (regexMatch "\\?[^#]" $tail) (regexMatch "#." $tail) -}}
{{- $urlProblems = append $urlProblems (printf "TOKEN_STORE_URL must not have a query or fragment (got %s): the settings are TOKEN_STORE_MODE, TOKEN_STORE_PASSWORD_FILE, ..." $shown) -}}
{{- else if not (regexMatch "^/?[0-9]*$" $path) -}}
{{- $urlProblems = append $urlProblems (printf "TOKEN_STORE_URL may end only in a database number, such as /0 (got %s)" $shown) -}}
{{- else if and (eq $mode "cluster") (regexMatch "^/[0-9]+$" $path) (ne $path "/0") -}}
{{- $urlProblems = append $urlProblems (printf "TOKEN_STORE_URL must not name a database with TOKEN_STORE_MODE=cluster: a cluster has only database 0 (got %s)" $shown) -}}
{{- end -}}
{{- end -}}
{{- $problems = concat $problems $urlProblems -}}
{{- if not $urlProblems -}}
{{- /* The seed nodes alike: one scheme, user and password (compared as written). */ -}}
{{- $schemes := list -}}
{{- range $list.urls }}{{ $schemes = append $schemes (lower (regexFind "^[A-Za-z][A-Za-z0-9+.-]*:" .)) }}{{ end -}}
{{- if or (gt (len (uniq $schemes)) 1) (gt (len (uniq $list.userinfos)) 1) -}}
{{- $problems = append $problems "TOKEN_STORE_URL lists seed nodes with different schemes, users or passwords: write every one in full, alike" -}}
{{- else -}}
{{- $userinfo := first $list.userinfos -}}
{{- $user = regexReplaceAll ":[\\s\\S]*$" $userinfo "" -}}
{{- $urlPassword = ne (regexReplaceAll "^[^:]*:?" $userinfo "") "" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $passwordFile := index $env "TOKEN_STORE_PASSWORD_FILE" -}}
{{- if and $urlPassword $passwordFile -}}
{{- $problems = append $problems "TOKEN_STORE_URL holds a password and TOKEN_STORE_PASSWORD_FILE is set: keep the password in the file alone and leave it out of the URL (a user name stays, before the \"@\")" -}}
{{- end -}}
{{- if and $user (not $urlPassword) (not $passwordFile) -}}
{{- $problems = append $problems (printf "TOKEN_STORE_URL names the user %q without a password: set TOKEN_STORE_PASSWORD_FILE to the file holding it" $user) -}}
{{- end -}}
{{- $prefix := index $env "TOKEN_STORE_PREFIX" -}}
{{- if and $prefix (not (regexMatch "^[A-Za-z0-9._:/@#=+-]{1,128}$" (toString $prefix))) -}}
{{- $problems = append $problems (printf "TOKEN_STORE_PREFIX may hold only letters, digits and . _ : / @ # = + -, up to 128 (got %s): it is written into an ACL key pattern and before a hash tag" (toJson (toString $prefix))) -}}
{{- end -}}
{{- end -}}
{{- join "\n" $problems -}}
{{- end -}}
