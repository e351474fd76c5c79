export const anchorActivities = {
  async noop(): Promise<string> {
    return 'ok';
  },
};
