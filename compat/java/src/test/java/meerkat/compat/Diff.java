package meerkat.compat;

import java.util.ArrayList;
import java.util.List;

/** A small line diff (longest common subsequence) printed unified-style with context. */
final class Diff {
    private static final int CONTEXT = 3;

    private Diff() {
    }

    static String unified(List<String> a, List<String> b) {
        int n = a.size();
        int m = b.size();
        int[][] lcs = new int[n + 1][m + 1];
        for (int i = n - 1; i >= 0; i--) {
            for (int j = m - 1; j >= 0; j--) {
                lcs[i][j] = a.get(i).equals(b.get(j)) ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
            }
        }
        List<String> ops = new ArrayList<>();
        int i = 0;
        int j = 0;
        while (i < n || j < m) {
            if (i < n && j < m && a.get(i).equals(b.get(j))) {
                ops.add("  " + a.get(i++));
                j++;
            } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
                ops.add("+ " + b.get(j++));
            } else {
                ops.add("- " + a.get(i++));
            }
        }
        // Keep changed lines and CONTEXT lines around them.
        boolean[] keep = new boolean[ops.size()];
        for (int k = 0; k < ops.size(); k++) {
            if (!ops.get(k).startsWith("  ")) {
                for (int c = Math.max(0, k - CONTEXT); c <= Math.min(ops.size() - 1, k + CONTEXT); c++) {
                    keep[c] = true;
                }
            }
        }
        StringBuilder sb = new StringBuilder();
        boolean skipped = false;
        for (int k = 0; k < ops.size(); k++) {
            if (keep[k]) {
                if (skipped) {
                    sb.append("  ...\n");
                    skipped = false;
                }
                sb.append(ops.get(k)).append('\n');
            } else {
                skipped = true;
            }
        }
        if (skipped) {
            sb.append("  ...\n");
        }
        return sb.toString();
    }
}
