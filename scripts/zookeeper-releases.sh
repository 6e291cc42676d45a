#!/usr/bin/env bash
# Older Apache ZooKeeper releases, for the import test against the formats they write
# (crates/meerkat/tests/zookeeper_import.rs, older_zookeeper_releases_import_equal).
#
#   scripts/zookeeper-releases.sh DIR [VERSION...]
#
# Fetches each release's jars (Maven) into DIR/<version>/lib, by default 3.4.14 3.5.10 3.6.4
# 3.7.2 3.8.4. Then: MEERKAT_OLD_ZOOKEEPER=DIR cargo test -p meerkat --test zookeeper_import older
set -euo pipefail

dir="${1:?usage: zookeeper-releases.sh DIR [VERSION...]}"
shift
versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then versions=(3.4.14 3.5.10 3.6.4 3.7.2 3.8.4); fi

for v in "${versions[@]}"; do
    mkdir -p "$dir/$v"
    if [ -f "$dir/$v/lib/.complete" ]; then continue; fi
    extra=""
    case "$v" in
        3.4.*|3.5.*) ;;
        # 3.6+ need the metrics and snappy jars that their pom marks as provided.
        *) extra='<dependency><groupId>io.dropwizard.metrics</groupId><artifactId>metrics-core</artifactId><version>4.1.12.1</version></dependency>
<dependency><groupId>org.xerial.snappy</groupId><artifactId>snappy-java</artifactId><version>1.1.10.5</version></dependency>' ;;
    esac
    cat > "$dir/$v/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>meerkat.test</groupId><artifactId>zookeeper-$v</artifactId><version>1</version><packaging>pom</packaging>
<dependencies>
<dependency><groupId>org.apache.zookeeper</groupId><artifactId>zookeeper</artifactId><version>$v</version></dependency>
$extra
<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version></dependency>
</dependencies></project>
POM
    (cd "$dir/$v" && mvn -B -q --no-transfer-progress dependency:copy-dependencies -DoutputDirectory=lib >&2)
    touch "$dir/$v/lib/.complete"
done
